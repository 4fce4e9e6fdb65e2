{#- Branch runs (write-audit-publish, --vars '{wap_branch: b}'): tables are written into branch b
    of each table (see the adapter's wap.py); views are not rebuilt (they read the branch heads
    through the session's spark.wap.branch already). Otherwise dbt-spark's materializations. -#}

{% materialization table, adapter='icetime', supported_languages=['sql', 'python'] %}
  {%- if var('wap_branch', none) is none -%}
    {{ return(materialization_table_spark()) }}
  {%- endif -%}
  {%- if model['language'] != 'sql' -%}
    {% do exceptions.raise_compiler_error("Model " ~ model['unique_id'] ~ ": only SQL models can be built into a wap_branch.") %}
  {%- endif -%}
  {%- set target_relation = this.incorporate(type='table') -%}
  {{ run_hooks(pre_hooks) }}
  {#- The table exists (icetime created it empty if it was new): replace the branch's rows. -#}
  {% call statement('main') -%}
    insert overwrite {{ target_relation }} by name
    {{ compiled_code }}
  {%- endcall %}
  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}

{% materialization view, adapter='icetime' %}
  {%- if var('wap_branch', none) is none -%}
    {{ return(materialization_view_default()) }}
  {%- endif -%}
  {{ log("icetime: " ~ this ~ " is a view: not rebuilt in a branch run (it reads the branch through spark.wap.branch)", info=true) }}
  {%- call noop_statement('main', 'SKIPPED (view in a branch run)') -%}-- view{%- endcall -%}
  {{ return({'relations': []}) }}
{% endmaterialization %}

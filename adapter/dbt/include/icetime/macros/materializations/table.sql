{#- table: dbt-spark's, except in a branch run (--vars '{wap_branch: b}'), where the rows are
    written into branch b of the table (see the adapter's wap.py) and main gets no data. A
    Python model's code runs first, here (dbt submits it only from a statement of the
    materialization itself), and its table is written from its DataFrame (python.sql). -#}

{% materialization table, adapter='icetime', supported_languages=['sql', 'python'] %}
  {%- set unchanged = icetime_unchanged() -%}
  {%- if unchanged is not none -%}{{ return(unchanged) }}{%- endif -%}
  {%- set branch = adapter.icetime_var('wap_branch') -%}
  {%- if model['language'] == 'python' -%}
    {{ run_hooks(pre_hooks) }}
    {%- call statement('python', language='python') -%}{{ compiled_code }}{%- endcall -%}
    {{ return(icetime_build_finished(icetime_python_table(branch))) }}
  {%- endif -%}
  {%- if branch is none -%}
    {{ return(icetime_build_finished(materialization_table_spark())) }}
  {%- endif -%}
  {%- set target_relation = this.incorporate(type='table') -%}
  {{ run_hooks(pre_hooks) }}
  {#- The table exists (icetime created it empty if it was new): replace the branch's rows. -#}
  {% call statement('main') -%}
    insert overwrite {{ target_relation }} by name
    {{ compiled_code }}
  {%- endcall %}
  {{ run_hooks(post_hooks) }}
  {{ return(icetime_build_finished({'relations': [target_relation]})) }}
{% endmaterialization %}

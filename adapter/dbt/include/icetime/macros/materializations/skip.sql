{#- Build skipping (see the adapter's builds/ and docs/flow/skip.md). Every materialization that
    can be skipped starts with icetime_unchanged(). When this run leaves the model as it is, no
    statement runs, no hook runs and nothing commits; the node's status is dbt's `no-op` and its
    message says why. On dbt-core 1.11 such a model ends before its materialization is called
    (the adapter's dbt_patches/no_op.py); the no-op here serves a dbt whose runner is not patched.
    In a --defer run, a model whose production build matches is cloned from production
    (zero-copy) instead of built. A materialization that completes calls
    icetime_build_finished(), which lets the adapter record the build on the table. -#}

{% macro icetime_unchanged() %}
  {%- set skip = adapter.icetime_skipped(model) -%}
  {%- if skip is none -%}{{ return(none) }}{%- endif -%}
  {%- if skip.reuse is not none -%}
    {%- set target_relation = this.incorporate(type='table') -%}
    {%- set message = icetime_clone_into(skip.reuse, target_relation, load_cached_relation(this), skip.reason) -%}
    {{ log("icetime: " ~ this ~ " cloned from production, not built: " ~ message ~ "; " ~ skip.reason, info=true) }}
    {{ return({'relations': [target_relation]}) }}
  {%- endif -%}
  {{ log("icetime: " ~ model.name ~ " not built: " ~ skip.reason, info=true) }}
  {%- call noop_statement('main', skip.message, 'no-op') -%}-- {{ this }}: {{ skip.reason }}{%- endcall -%}
  {{ return({'relations': [this]}) }}
{% endmacro %}


{% macro icetime_build_finished(result) %}
  {% do adapter.icetime_build_finished(model) %}
  {{ return(result) }}
{% endmacro %}

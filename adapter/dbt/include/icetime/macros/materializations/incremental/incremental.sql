{#- incremental: incremental_strategy='cdf' is icetime's own (cdf.sql); every other strategy is
    dbt-spark's materialization with icetime's strategy macros (strategies.sql). A full refresh
    of an existing Iceberg table replaces it in one commit, as a table model does, instead of
    dbt-spark's drop and create: the table keeps its identity, history and tags. A Python
    model's code runs here (dbt submits it only from the materialization itself), and its new
    rows come from its DataFrame (python.sql), a CDF one's as a SQL model's query's. -#}

{% materialization incremental, adapter='icetime', supported_languages=['sql', 'python'] -%}
  {%- set unchanged = icetime_unchanged() -%}
  {%- if unchanged is not none -%}{{ return(unchanged) }}{%- endif -%}
  {%- set existing = load_relation(this) -%}
  {%- if model['language'] == 'python' -%}
    {{ run_hooks(pre_hooks) }}
    {%- set cdf = config.get('incremental_strategy') == 'cdf' -%}
    {%- if cdf -%}
      {#- Its dbt.changes() reads planned, their views made where the code runs (python.sql). -#}
      {% do adapter.icetime_python_changes(model, icetime_python_inputs(), should_full_refresh()) %}
    {%- endif -%}
    {%- call statement('python', language='python') -%}{{ compiled_code }}{%- endcall -%}
    {%- if cdf -%}
      {{ return(icetime_build_finished(icetime_python_cdf())) }}
    {%- endif -%}
    {{ return(icetime_build_finished(icetime_python_incremental(existing))) }}
  {%- elif config.get('incremental_strategy') == 'cdf' -%}
    {{ return(icetime_build_finished(icetime_cdf_materialization())) }}
  {%- elif should_full_refresh() and existing is not none and existing.is_table -%}
    {{ return(icetime_build_finished(materialization_table_spark())) }}
  {%- else -%}
    {{ return(icetime_build_finished(materialization_incremental_spark())) }}
  {%- endif -%}
{%- endmaterialization %}

{#- incremental: incremental_strategy='cdf' is icetime's own (cdf.sql); every other strategy is
    dbt-spark's materialization with icetime's strategy macros (strategies.sql). A full refresh
    of an existing Iceberg table replaces it in one commit, as a table model does, instead of
    dbt-spark's drop and create: the table keeps its identity, history and tags. A Python
    model's code runs here (dbt submits it only from the materialization itself), and its new
    rows come from its DataFrame (python.sql). -#}

{% materialization incremental, adapter='icetime', supported_languages=['sql', 'python'] -%}
  {%- set unchanged = icetime_unchanged() -%}
  {%- if unchanged is not none -%}{{ return(unchanged) }}{%- endif -%}
  {%- set existing = load_relation(this) -%}
  {%- if model['language'] == 'python' -%}
    {%- if config.get('incremental_strategy') == 'cdf' -%}
      {% do exceptions.raise_compiler_error("Python model " ~ model['unique_id'] ~ ": incremental_strategy 'cdf' is for SQL models; a Python model takes append, merge, insert_overwrite or microbatch") %}
    {%- endif -%}
    {{ run_hooks(pre_hooks) }}
    {%- call statement('python', language='python') -%}{{ compiled_code }}{%- endcall -%}
    {{ return(icetime_build_finished(icetime_python_incremental(existing))) }}
  {%- elif config.get('incremental_strategy') == 'cdf' -%}
    {{ return(icetime_build_finished(icetime_cdf_materialization())) }}
  {%- elif should_full_refresh() and existing is not none and existing.is_table -%}
    {{ return(icetime_build_finished(materialization_table_spark())) }}
  {%- else -%}
    {{ return(icetime_build_finished(materialization_incremental_spark())) }}
  {%- endif -%}
{%- endmaterialization %}

{#- incremental: incremental_strategy='cdf' is icetime's own (cdf.sql); every other strategy is
    dbt-spark's materialization with icetime's strategy macros (strategies.sql). A full refresh
    of an existing Iceberg table replaces it in one commit, as a table model does, instead of
    dbt-spark's drop and create: the table keeps its identity, history and tags. -#}

{% materialization incremental, adapter='icetime', supported_languages=['sql', 'python'] -%}
  {%- set unchanged = icetime_unchanged() -%}
  {%- if unchanged is not none -%}{{ return(unchanged) }}{%- endif -%}
  {%- set existing = load_relation(this) -%}
  {%- if config.get('incremental_strategy') == 'cdf' -%}
    {{ return(icetime_build_finished(icetime_cdf_materialization())) }}
  {%- elif should_full_refresh() and existing is not none and existing.is_table -%}
    {{ return(icetime_build_finished(materialization_table_spark())) }}
  {%- else -%}
    {{ return(icetime_build_finished(materialization_incremental_spark())) }}
  {%- endif -%}
{%- endmaterialization %}

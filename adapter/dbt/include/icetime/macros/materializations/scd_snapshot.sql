{#- strategy 'iceberg_history': an SCD snapshot whose versions come from its source's Iceberg
    commits, each stamped with its commit's time. The snapshot's query compiles over the run's
    change view (the adapter's scd/session.py renders source()/ref() as it); the adapter plans
    the run and writes the versions SQL (scd/versions.py); the tail is the change engine's
    (changes.sql). See docs/flow/history-snapshot.md. -#}

{% macro icetime_scd_snapshot() %}
  {%- set unchanged = icetime_unchanged() -%}
  {%- if unchanged is not none -%}{{ return(unchanged) }}{%- endif -%}
  {%- set existing = load_relation(this) -%}
  {%- if existing is not none and not existing.is_table -%}
    {% do exceptions.relation_wrong_type(existing, 'table') %}
  {%- endif -%}
  {%- if not adapter.check_schema_exists(this.database, this.schema) -%}
    {% do create_schema(this) %}
  {%- endif -%}
  {%- set run = adapter.icetime_scd_prepare(model) -%}
  {%- set committed = [] -%}

  {{ run_hooks(pre_hooks) }}
  {%- if run.empty -%}
    {%- call noop_statement('main', 'EMPTY') -%}-- --empty: {{ this }} left as it is{%- endcall -%}
  {%- elif run.has_changes -%}
    {%- if run.full or existing is none -%}
      {{ log("icetime: building " ~ this ~ " from the history of its source (" ~ (run.reason or 'first run') ~ ")", info=true) }}
    {%- endif -%}
    {%- set changes = icetime_changes_temp_relation('__dbt_tmp') -%}
    {% call statement('create_tmp_relation') %}{{ create_table_as(True, changes, compiled_code) }}{% endcall %}
    {%- set columns = adapter.get_columns_in_relation(changes) -%}
    {%- if run.full or existing is none -%}
      {%- set sql = adapter.icetime_scd_versions(model, changes, columns) -%}
      {%- do icetime_changes_write(create_table_as(False, this, sql)) -%}
    {%- else -%}
      {%- do icetime_changes_write(adapter.icetime_scd_versions(model, changes, columns, adapter.get_columns_in_relation(this))) -%}
    {%- endif -%}
    {% do committed.append(true) %}
    {% call statement('icetime_history_drop_changes') %}drop view if exists {{ changes }}{% endcall %}
  {%- else -%}
    {%- do icetime_changes_none(run) -%}
    {%- if run.moves %}{% do committed.append(true) %}{% endif -%}
  {%- endif -%}
  {{ return(icetime_changes_end(run, existing, committed | length > 0)) }}
{% endmacro %}

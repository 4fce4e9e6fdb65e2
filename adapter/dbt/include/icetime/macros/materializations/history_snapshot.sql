{#- strategy 'iceberg_history': a dbt snapshot whose versions come from its source's Iceberg
    commits, each stamped with its commit's time. The snapshot's query compiles over the run's
    change view (the adapter's cdf/snapshots.py renders source()/ref() as it); the adapter plans
    the run, writes the versions SQL (cdf/versions.py) and moves the watermark after the data
    commit. See docs/flow/history-snapshot.md. -#}

{% macro icetime_history_snapshot() %}
  {%- set unchanged = icetime_unchanged() -%}
  {%- if unchanged is not none -%}{{ return(unchanged) }}{%- endif -%}
  {%- set existing = load_relation(this) -%}
  {%- if existing is not none and not existing.is_table -%}
    {% do exceptions.relation_wrong_type(existing, 'table') %}
  {%- endif -%}
  {%- if not adapter.check_schema_exists(this.database, this.schema) -%}
    {% do create_schema(this) %}
  {%- endif -%}
  {%- set run = adapter.icetime_history_prepare(model) -%}
  {%- set committed = [] -%}

  {{ run_hooks(pre_hooks) }}
  {%- if run.empty -%}
    {%- call noop_statement('main', 'EMPTY') -%}-- --empty: {{ this }} left as it is{%- endcall -%}
  {%- elif run.has_changes -%}
    {%- if run.full or existing is none -%}
      {{ log("icetime: building " ~ this ~ " from the history of its source (" ~ (run.reason or 'first run') ~ ")", info=true) }}
    {%- endif -%}
    {%- set changes = icetime_cdf_temp_relation('__dbt_tmp') -%}
    {% call statement('create_tmp_relation') %}{{ create_table_as(True, changes, compiled_code) }}{% endcall %}
    {%- set columns = adapter.get_columns_in_relation(changes) -%}
    {%- if run.full or existing is none -%}
      {%- set sql = adapter.icetime_history_versions(model, changes, columns) -%}
      {% do adapter.icetime_cdf_fault('before_write') %}
      {% do adapter.icetime_cdf_fault('during_write') %}
      {%- call statement('main') -%}{{ create_table_as(False, this, sql) }}{%- endcall -%}
    {%- else -%}
      {%- set sql = adapter.icetime_history_versions(model, changes, columns, adapter.get_columns_in_relation(this)) -%}
      {% do adapter.icetime_cdf_fault('before_write') %}
      {% do adapter.icetime_cdf_fault('during_write') %}
      {%- call statement('main') -%}{{ sql }}{%- endcall -%}
    {%- endif -%}
    {% do committed.append(true) %}
    {% call statement('icetime_history_drop_changes') %}drop view if exists {{ changes }}{% endcall %}
  {%- else -%}
    {%- do icetime_cdf_no_changes(run) -%}
    {%- if run.moves %}{% do committed.append(true) %}{% endif -%}
  {%- endif -%}
  {% do adapter.icetime_cdf_finish(model, committed | length > 0) %}
  {%- set main = load_result('main') -%}
  {% do store_result('main', response=adapter.icetime_cdf_response(model, main.response), agate_table=main.table) %}

  {% do apply_grants(this, config.get('grants'), should_revoke(existing, full_refresh_mode=run.full)) %}
  {% do persist_docs(this, model) %}
  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [this]}) }}
{% endmacro %}

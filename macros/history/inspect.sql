{#- Looking at a table's history: its commits, two versions side by side, and retention. -#}

{% macro history(model=none, relation=none, limit=50, width=none) %}
  {%- do icetime_check_arguments('history', kwargs, ['model', 'relation', 'limit', 'width']) -%}
  {{ return(adapter.dispatch('history', 'icetime')(model, relation, limit, width)) }}
{% endmacro %}

{% macro default__history(model, relation, limit, width) %}{{ icetime_requires_adapter('history') }}{% endmacro %}

{% macro icetime__history(model, relation, limit, width) %}
  {#- DESCRIBE HISTORY for an Iceberg table: one row per snapshot-log entry, newest first, with
      rows/files/bytes added and removed, the writer, and restores marked. Printed in lines that
      fit the terminal (or `width` characters; the widest columns are cut to fit), and returned
      as an agate table. -#}
  {%- if execute -%}
    {% set table = adapter.icetime_history_operation("history", graph, model, relation, limit) %}
    {% do print(adapter.icetime_history_text(table, width)) %}
    {{ return(table) }}
  {%- endif -%}
{% endmacro %}


{% macro diff(from=none, to=none, model=none, relation=none, key=none, rows=0) %}
  {%- do icetime_check_arguments('diff', kwargs, ['from', 'to', 'model', 'relation', 'key', 'rows']) -%}
  {{ return(adapter.dispatch('diff', 'icetime')(from, to, model, relation, key, rows)) }}
{% endmacro %}

{% macro default__diff(from, to, model, relation, key, rows) %}{{ icetime_requires_adapter('diff') }}{% endmacro %}

{% macro icetime__diff(from, to, model, relation, key, rows) %}
  {#- Two versions of a table side by side: counts of rows only in `from` and only in `to`; with
      `key`, changed rows and the columns that changed; `rows: N` shows up to N of each, changed
      rows as their key and each changed column's old -> new value. `to` defaults to the current
      snapshot. -#}
  {%- if execute %}{{ log(adapter.icetime_history_operation("diff", graph, from, to, model, relation, key, rows), info=true) }}{% endif -%}
{% endmacro %}


{% test retention_covers(model, days) %}
  {{ return(adapter.dispatch('test_retention_covers', 'icetime')(model, days)) }}
{% endtest %}

{% macro default__test_retention_covers(model, days) %}{{ icetime_requires_adapter('retention_covers') }}{% endmacro %}

{% macro icetime__test_retention_covers(model, days) %}
  {#- Fails when the table's oldest retained snapshot is younger than `days` days: time travel
      that far back, which the project promises, would fail. -#}
  {%- if days is not number or days <= 0 -%}
    {% do exceptions.raise_compiler_error("retention_covers: 'days' must be a positive number; got " ~ days) %}
  {%- endif -%}
  {%- set table = model.incorporate(snapshot_id=none, projection=none) -%}
  select min(committed_at) as oldest_snapshot, {{ days }} as promised_days
  from {{ table }}.snapshots
  having min(committed_at) > current_timestamp() - make_interval(0, 0, 0, {{ days | int }}, 0, 0, 0)
{% endmacro %}


{% macro provenance(relation, snapshot=none) %}
  {{ return(adapter.dispatch('provenance', 'icetime')(relation, snapshot)) }}
{% endmacro %}

{% macro default__provenance(relation, snapshot) %}{{ icetime_requires_adapter('provenance') }}{% endmacro %}

{% macro icetime__provenance(relation, snapshot) %}
  {#- What built one snapshot of `relation` (default: its current one; any pin form), from the
      snapshot's own summary: {table, snapshot_id, committed_at, operation, recorded, node,
      invocation_id, inputs: {table: {snapshot_id, table_uuid, node}}, fingerprint,
      cdf_watermark, icetime_version}. Printed, and returned. -#}
  {%- if execute -%}
    {%- set found = adapter.icetime_history_operation("provenance", graph, relation, snapshot) -%}
    {{ print(found['text']) }}
    {{ return(found) }}
  {%- endif -%}
{% endmacro %}


{% macro lineage(relation, snapshot=none) %}
  {{ return(adapter.dispatch('lineage', 'icetime')(relation, snapshot)) }}
{% endmacro %}

{% macro default__lineage(relation, snapshot) %}{{ icetime_requires_adapter('lineage') }}{% endmacro %}

{% macro icetime__lineage(relation, snapshot) %}
  {#- The inputs of one snapshot of `relation`, followed back through every table icetime built
      to the sources: {table, snapshot_id, node, note, inputs: [...], sources: [{table,
      snapshot_id}]}. Printed as a tree, and returned. -#}
  {%- if execute -%}
    {%- set found = adapter.icetime_history_operation("lineage", graph, relation, snapshot) -%}
    {{ print(found['text']) }}
    {{ return(found) }}
  {%- endif -%}
{% endmacro %}

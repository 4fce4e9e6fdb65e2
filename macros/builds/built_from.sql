{#- The record icetime keeps on a table of its last build: the input snapshots it read, its
    fingerprint and the snapshot it committed (format: the adapter's builds/record.py). -#}

{% macro built_from(relation) -%}
  {{ return(adapter.dispatch('built_from', 'icetime')(relation)) }}
{%- endmacro %}

{% macro default__built_from(relation) %}{{ icetime_requires_adapter('built_from') }}{% endmacro %}

{% macro icetime__built_from(relation) -%}
  {#- {"inputs": {"catalog.schema.table": snapshot_id, ...}, "snapshot_id": ..., ...} -#}
  {{ return(adapter.icetime_built_from(relation)) }}
{%- endmacro %}

{#- Which input snapshots a table was built from, as icetime recorded when it wrote it. -#}

{% macro built_from(relation) -%}
  {{ return(adapter.dispatch('built_from', 'icetime')(relation)) }}
{%- endmacro %}

{% macro default__built_from(relation) %}{{ icetime_requires_adapter('built_from') }}{% endmacro %}

{% macro icetime__built_from(relation) -%}
  {#- {"inputs": {"catalog.schema.table": snapshot_id, ...}, "invocation_id": "..."} -#}
  {{ return(adapter.icetime_built_from(relation)) }}
{%- endmacro %}

{#- Which input snapshots a table was built from, as icetime recorded when it wrote it. -#}

{% macro built_from(relation) -%}
  {{ return(adapter.dispatch('built_from', 'icetime')(relation)) }}
{%- endmacro %}

{% macro default__built_from(relation) -%}
  {% do exceptions.raise_compiler_error(
    "icetime.built_from needs the icetime adapter (profile type: icetime); this target is '"
    ~ target.type ~ "'.") %}
{%- endmacro %}

{% macro icetime__built_from(relation) -%}
  {#- {"inputs": {"catalog.schema.table": snapshot_id, ...}, "invocation_id": "..."} -#}
  {{ return(adapter.icetime_built_from(relation)) }}
{%- endmacro %}

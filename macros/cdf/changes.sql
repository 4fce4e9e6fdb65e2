{#- The change feed of an Iceberg upstream, for models with incremental_strategy='cdf'. -#}

{% macro changes(relation) %}
  {{ return(adapter.dispatch('changes', 'icetime')(relation)) }}
{% endmacro %}

{% macro default__changes(relation) %}{{ icetime_requires_adapter('changes') }}{% endmacro %}

{% macro icetime__changes(relation) %}
  {#- The change rows of an Iceberg upstream since this model's watermark. Columns: the
      upstream's, then _change_type (insert, delete, update_before, update_after),
      _commit_snapshot_id, _commit_timestamp, _change_ordinal. On a first run or --full-refresh:
      every row at the pinned snapshot, as inserts. -#}
  {%- if not execute or model.resource_type == 'unit_test' -%}
    {#- In a dbt unit test the given rows of the upstream are the change rows (README). -#}
    {{ return(relation) }}
  {%- endif -%}
  {{ return(adapter.icetime_changes(relation, model, should_full_refresh())) }}
{% endmacro %}

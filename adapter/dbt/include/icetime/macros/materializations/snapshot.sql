{#- snapshot: dbt-spark's for the timestamp and check strategies; strategy iceberg_history builds
    the versions from the source's Iceberg commits (icetime_scd_snapshot). A completed
    snapshot records the input snapshots it was built from. -#}

{% materialization snapshot, adapter='icetime' %}
  {%- if config.get('strategy') == 'iceberg_history' -%}
    {{ return(icetime_build_finished(icetime_scd_snapshot())) }}
  {%- endif -%}
  {{ return(icetime_build_finished(materialization_snapshot_spark())) }}
{% endmaterialization %}

{% macro spark_build_snapshot_staging_table(strategy, sql, target_relation) %}
  {#- dbt-spark's, with the staging view beside the snapshot (catalog and namespace named).
      dbt-spark leaves both out for Iceberg, so the view lands in the catalog's root namespace:
      a JDBC catalog takes it, a REST catalog refuses a view with no namespace. -#}
  {%- set tmp_relation = api.Relation.create(identifier=target_relation.identifier ~ '__dbt_tmp',
                                             schema=target_relation.schema,
                                             database=target_relation.database,
                                             type='view') -%}
  {% call statement('build_snapshot_staging_relation') %}
    {{ create_view_as(tmp_relation, snapshot_staging_table(strategy, sql, target_relation)) }}
  {% endcall %}
  {% do return(tmp_relation) %}
{% endmacro %}

{% macro icetime__snapshot_merge_sql(target, source, insert_cols) -%}
  {#- dbt-spark's merge, reading the staging view by its full name (see above). -#}
  {%- set columns = config.get('snapshot_table_column_names') or get_snapshot_table_column_names() -%}
  {%- set current = config.get('dbt_valid_to_current') -%}
  {%- set valid_to = 'DBT_INTERNAL_DEST.' ~ columns.dbt_valid_to -%}
  merge into {{ target }} as DBT_INTERNAL_DEST
  using {{ source }} as DBT_INTERNAL_SOURCE
  on DBT_INTERNAL_SOURCE.{{ columns.dbt_scd_id }} = DBT_INTERNAL_DEST.{{ columns.dbt_scd_id }}
  when matched
    and {% if current %}({{ valid_to }} = {{ current }} or {{ valid_to }} is null){% else %}{{ valid_to }} is null{% endif %}
    and DBT_INTERNAL_SOURCE.dbt_change_type in ('update', 'delete')
    then update set {{ columns.dbt_valid_to }} = DBT_INTERNAL_SOURCE.{{ columns.dbt_valid_to }}
  when not matched and DBT_INTERNAL_SOURCE.dbt_change_type = 'insert'
    then insert *
{%- endmacro %}

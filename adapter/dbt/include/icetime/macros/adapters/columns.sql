{#- Columns of Iceberg relations: describing them (pinned reads too) and evolving them. -#}

{% macro icetime__get_columns_in_relation_raw(relation) -%}
  {#- A pinned relation is a time-travel read, which DESCRIBE cannot name: describe the query. -#}
  {% call statement('get_columns_in_relation_raw', fetch_result=True) %}
    {%- if relation.snapshot_id is not none -%}
      describe query select * from {{ relation }}
    {%- else -%}
      describe extended {{ relation }}
    {%- endif -%}
  {% endcall %}
  {% do return(load_result('get_columns_in_relation_raw').table) %}
{% endmacro %}

{% macro icetime__alter_relation_add_remove_columns(relation, add_columns, remove_columns) %}
  {#- Iceberg drops columns as a metadata change (dbt-spark refuses to). The relation is named
      alone: a ref in an --empty run or a pinned run renders as a read. -#}
  {% if add_columns %}
    {% call statement('icetime_add_columns') -%}
      alter table {{ relation.name_sql() }} add columns (
        {%- for column in add_columns %}{{ column.quoted }} {{ icetime__spark_type(column.data_type) }}{{ ', ' if not loop.last }}{% endfor -%}
      )
    {%- endcall %}
  {% endif %}
  {% for column in remove_columns or [] %}
    {% call statement('icetime_drop_column') -%}
      alter table {{ relation.name_sql() }} drop column {{ column.quoted }}
    {%- endcall %}
  {% endfor %}
{% endmacro %}

{% macro icetime__alter_column_type(relation, column_name, new_column_type) -%}
  {#- Iceberg changes a column's type in place (widening only); the relation is named alone. -#}
  {% call statement('alter_column_type') %}
    alter table {{ relation.name_sql() }} alter column {{ adapter.quote(column_name) }} type {{ icetime__spark_type(new_column_type) }}
  {% endcall %}
{%- endmacro %}

{% macro icetime__spark_type(data_type) -%}
  {#- Postgres' unbounded strings (varchar, character varying, text), which dbt's cross-database
      code writes, are Spark's string: Spark requires a length for varchar. -#}
  {%- if data_type | lower | trim in ['varchar', 'character varying', 'text'] -%}
    string
  {%- else -%}
    {{ data_type }}
  {%- endif -%}
{%- endmacro %}

{% macro icetime__get_columns_in_relation(relation) -%}
  {#- The relation's columns, parsed (dbt-spark returns DESCRIBE's raw rows, whose partition and
      metadata lines dbt's snapshot materialization then takes for columns). -#}
  {{ return(adapter.get_columns_in_relation(relation)) }}
{%- endmacro %}

{% macro icetime__persist_docs(relation, model, for_relation=true, for_columns=true) -%}
  {#- A view's comments are part of its CREATE VIEW (the column list and comment clause of
      dbt-spark's create_view_as); ALTER TABLE cannot reach a view. -#}
  {%- if relation.type != 'view' -%}
    {% do spark__persist_docs(relation, model, for_relation, for_columns) %}
  {%- endif -%}
{%- endmacro %}

{% macro icetime__create_columns(relation, columns) %}
  {#- Snapshots: dbt's per-key columns of a multi-column unique_key (dbt_unique_key_1, ...) are
      staging columns, never the target's (dbt-spark adds them, and the next run's staging
      select then names them twice). -#}
  {%- set kept = [] -%}
  {%- for column in columns -%}
    {%- if not modules.re.match('^dbt_unique_key_[0-9]+$', column.name | lower) -%}
      {%- do kept.append(column) -%}
    {%- endif -%}
  {%- endfor -%}
  {% do spark__create_columns(relation, kept) %}
{% endmacro %}

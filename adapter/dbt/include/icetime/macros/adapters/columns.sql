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
  {#- Iceberg drops columns as a metadata change (dbt-spark refuses to). -#}
  {% if add_columns %}
    {% call statement('icetime_add_columns') -%}
      alter table {{ relation }} add columns (
        {%- for column in add_columns %}{{ column.quoted }} {{ column.data_type }}{{ ', ' if not loop.last }}{% endfor -%}
      )
    {%- endcall %}
  {% endif %}
  {% for column in remove_columns or [] %}
    {% call statement('icetime_drop_column') -%}
      alter table {{ relation }} drop column {{ column.quoted }}
    {%- endcall %}
  {% endfor %}
{% endmacro %}

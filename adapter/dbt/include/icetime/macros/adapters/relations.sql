{#- Catalog-level overrides of dbt-spark: Iceberg namespaces, listings, drops. -#}

{% macro icetime__show_relations(schema_relation, kind) %}
  {#- One catalog listing of a namespace: kind is 'tables' or 'views'. -#}
  {%- if kind not in ['tables', 'views'] -%}
    {% do exceptions.raise_compiler_error("icetime__show_relations: kind must be 'tables' or 'views'; got " ~ kind) %}
  {%- endif -%}
  {% call statement('icetime_show_' ~ kind, fetch_result=True, auto_begin=False) -%}
    show {{ kind }} in {{ schema_relation.without_identifier() }}
  {%- endcall %}
  {% do return(load_result('icetime_show_' ~ kind).table) %}
{% endmacro %}

{% macro icetime__list_schemas(database) -%}
  {% call statement('list_schemas', fetch_result=True, auto_begin=False) %}
    show namespaces {% if database %}in {{ database }}{% endif %}
  {% endcall %}
  {{ return(load_result('list_schemas').table) }}
{% endmacro %}

{% macro icetime__generate_database_name(custom_database_name=none, node=none) -%}
  {#- dbt-spark always answers none; for icetime the database is the Iceberg catalog. -#}
  {{ return(default__generate_database_name(custom_database_name, node)) }}
{%- endmacro %}

{% macro icetime__drop_relation(relation) -%}
  {#- Tables are purged: a dbt-managed table's files go with it instead of leaking. A clone drops
      only what it wrote; a table that live clones read is not dropped (see README, clones). -#}
  {%- if relation.type == 'view' -%}
    {% call statement('drop_relation', auto_begin=False) -%}
      drop view if exists {{ relation }}
    {%- endcall %}
  {%- elif adapter.icetime_drop_table(relation) == 'absent' -%}
    {#- Not an Iceberg table of the catalog (a temporary view, or nothing): as dbt-spark would. -#}
    {% call statement('drop_relation', auto_begin=False) -%}
      drop table if exists {{ relation }} purge
    {%- endcall %}
  {%- endif -%}
{% endmacro %}

{% macro icetime__drop_schema(relation) -%}
  {#- Iceberg's JDBC catalog refuses DROP NAMESPACE ... CASCADE, so drop the contents first. -#}
  {%- set schema_relation = relation.without_identifier() -%}
  {% for member in adapter.icetime_list_relations(schema_relation) %}
    {% do adapter.drop_relation(member) %}
  {% endfor %}
  {% call statement('drop_schema', auto_begin=False) -%}
    drop namespace if exists {{ schema_relation }}
  {%- endcall %}
{% endmacro %}

{% macro icetime__rename_relation(from_relation, to_relation) -%}
  {#- Spark takes the new name relative to the old one's catalog: leave the catalog out. -#}
  {%- set new_name = to_relation.include(database=false) -%}
  {% call statement('rename_relation') -%}
    {%- if from_relation.type == 'view' -%}
      alter view {{ from_relation }} rename to {{ new_name }}
    {%- else -%}
      alter table {{ from_relation }} rename to {{ new_name }}
    {%- endif -%}
  {%- endcall %}
{% endmacro %}


{% macro icetime__tblproperties_clause() -%}
  {#- A created table's properties: the model's tblproperties, validated and quoted (dbt-spark
      renders them unquoted), and those icetime commits with the data (a CDF rebuild's
      watermarks). -#}
  {%- set items = adapter.icetime_tblproperties(config.get('tblproperties'), model) -%}
  {%- if items %}
    tblproperties ({{ items | join(', ') }})
  {%- endif %}
{%- endmacro %}

{% macro icetime__create_view_as(relation, sql) -%}
  {#- dbt-spark's view, over a select whose untyped `null` columns are cast to string (an Iceberg
      view cannot hold Spark's void type), after the model's sql_header (dbt-spark drops it;
      the connection runs each of its statements). -#}
  {%- set sql_header = config.get('sql_header', none) -%}
  {{ sql_header if sql_header is not none }}
  {{ spark__create_view_as(relation, adapter.icetime_typed_select(sql, sql_header)) }}
{%- endmacro %}

{% macro icetime__create_table_as(temporary, relation, compiled_code, language='sql') -%}
  {#- dbt-spark's table, over a select whose untyped `null` columns are cast to string (see
      create_view_as), after the model's sql_header. A contract-enforced table's select is
      dbt's contract select, which icetime guards (constraints.sql); an incremental run's new
      rows (a temporary view) go through it too, so the MERGE or INSERT reading them fails
      before it commits. -#}
  {%- set sql_header = config.get('sql_header', none) if language == 'sql' else none -%}
  {%- set contract = config.get('contract') -%}
  {%- if language == 'sql' and temporary and contract and contract.enforced -%}
    {%- set compiled_code = get_select_subquery(compiled_code) -%}
  {%- elif language == 'sql' and not temporary -%}
    {%- set compiled_code = adapter.icetime_typed_select(compiled_code, sql_header) -%}
  {%- endif -%}
  {{ sql_header if sql_header is not none }}
  {{ spark__create_table_as(temporary, relation, compiled_code, language) }}
{%- endmacro %}

{#- seed: every load is one atomic commit, the first one too, and a reload is one commit on the
    same Iceberg table, never a drop and create. The table keeps its identity, history, tags
    (clones' protective tags among them), so pins,
    change feeds and clones see a changed seed as an ordinary `overwrite` commit. Columns the
    seed added or dropped, and types Iceberg can widen, are evolved in place first; only a type
    change Iceberg cannot make replaces the table (create or replace keeps its history), and the
    log says so. -#}

{% materialization seed, adapter='icetime' %}
  {%- set old_relation = adapter.get_relation(database=database, schema=schema, identifier=model['alias']) -%}
  {%- set full_refresh_mode = should_full_refresh() -%}
  {%- set agate_table = load_agate_table() -%}
  {%- do store_result('agate_table', response='OK', agate_table=agate_table) -%}
  {%- if old_relation is not none and old_relation.is_view -%}
    {{ exceptions.raise_compiler_error("Cannot seed to '{}', it is a view".format(old_relation.render())) }}
  {%- endif -%}
  {%- set columns = icetime_seed_columns(model, agate_table) -%}
  {{ run_hooks(pre_hooks) }}

  {%- if old_relation is none -%}
    {%- set sql = icetime_seed_create(this, columns, replace=false) -%}
    {%- do icetime_seed_load(columns, agate_table) -%}
  {%- elif full_refresh_mode or not icetime_seed_evolve(old_relation, columns) -%}
    {{ log("icetime: " ~ this ~ ": replacing the table (--full-refresh, or a column type Iceberg cannot change in place); its history and tags are kept; change feeds read it as its changes when every column compares, else as a history gap", info=true) }}
    {%- set sql = icetime_seed_create(this, columns, replace=true) -%}
    {%- do icetime_seed_load(columns, agate_table) -%}
  {%- else -%}
    {%- set sql = icetime_seed_overwrite(columns, agate_table) -%}
  {%- endif -%}
  {%- set rows = agate_table.rows | length -%}
  {%- set code = 'CREATE' if old_relation is none or full_refresh_mode else 'INSERT' -%}
  {% call noop_statement('main', code ~ ' ' ~ rows, code, rows) %}{{ sql }}{% endcall %}

  {%- set target_relation = this.incorporate(type='table') -%}
  {% do apply_grants(target_relation, config.get('grants'), should_revoke=should_revoke(old_relation, full_refresh_mode)) %}
  {% do persist_docs(target_relation, model) %}
  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}


{% macro icetime_seed_columns(model, agate_table) %}
  {#- The seed's columns: quoted name, bare name and Spark type (column_types overrides). -#}
  {%- set column_override = model['config'].get('column_types', {}) -%}
  {%- set quote_seed_column = model['config'].get('quote_columns', None) -%}
  {%- set columns = [] -%}
  {%- for name in agate_table.column_names -%}
    {%- set type = column_override.get(name, adapter.convert_type(agate_table, loop.index0)) -%}
    {%- do columns.append({'name': name | string, 'quoted': adapter.quote_seed_column(name | string, quote_seed_column), 'type': type}) -%}
  {%- endfor -%}
  {{ return(columns) }}
{% endmacro %}


{% macro icetime_seed_create(relation, columns, replace) %}
  {%- set sql -%}
    {{ 'create or replace table' if replace else 'create table' }} {{ relation }} (
      {%- for column in columns %}{{ column.quoted }} {{ column.type }}{{ ', ' if not loop.last }}{% endfor -%}
    )
    {{ file_format_clause() }}
    {{ partition_cols(label="partitioned by") }}
    {{ location_clause() }}
    {{ comment_clause() }}
  {%- endset -%}
  {% call statement('icetime_seed_create') %}{{ sql }}{% endcall %}
  {{ return(sql) }}
{% endmacro %}


{% macro icetime_seed_evolve(relation, columns) %}
  {#- Bring the table's columns to the seed's in place; false when that cannot be done. -#}
  {%- set evolution = adapter.icetime_evolution(relation, columns) -%}
  {%- if evolution.incompatible -%}
    {{ log("icetime: " ~ relation ~ ": the seed changes " ~ evolution.incompatible | join(', ') ~ ", which Iceberg cannot evolve in place", info=true) }}
    {{ return(false) }}
  {%- endif -%}
  {%- for name, type in evolution.add %}
    {% call statement('icetime_seed_add') %}alter table {{ relation }} add columns ({{ adapter.icetime_quote_identifier(name) }} {{ type }}){% endcall %}
  {%- endfor -%}
  {%- for name in evolution.drop %}
    {% call statement('icetime_seed_drop') %}alter table {{ relation }} drop column {{ adapter.icetime_quote_identifier(name) }}{% endcall %}
  {%- endfor -%}
  {%- for name, type in evolution.widen %}
    {% call statement('icetime_seed_widen') %}alter table {{ relation }} alter column {{ adapter.icetime_quote_identifier(name) }} type {{ type }}{% endcall %}
  {%- endfor -%}
  {{ return(true) }}
{% endmacro %}


{% macro icetime_seed_overwrite(columns, agate_table) %}
  {#- A reload replaces every row of the seed in one `insert overwrite` commit. -#}
  {{ return(icetime_seed_staged(columns, agate_table, 'insert overwrite')) }}
{% endmacro %}


{% macro icetime_seed_load(columns, agate_table) %}
  {#- A first load (or a replaced table's) is one commit too: a pin taken during the load
      sees no rows or all of them, never a part. Rows that fit in one batch are inserted
      directly; more go through a staging table. -#}
  {%- if agate_table.rows | length <= get_batch_size() -%}
    {%- do icetime_seed_insert(this, columns, agate_table) -%}
  {%- else -%}
    {%- do icetime_seed_staged(columns, agate_table, 'insert into') -%}
  {%- endif -%}
{% endmacro %}


{% macro icetime_seed_staged(columns, agate_table, verb) %}
  {#- The rows go to a staging table first (in batches), then into the seed in one commit
      (`verb`: insert into, or insert overwrite); the staging table is dropped. -#}
  {%- set staging = this.incorporate(path={"identifier": this.identifier ~ "__icetime_seed"}) -%}
  {%- do icetime_seed_create(staging, columns, replace=true) -%}
  {%- do icetime_seed_insert(staging, columns, agate_table) -%}
  {%- set sql -%}
    {{ verb }} {{ this }} by name select * from {{ staging }}
  {%- endset -%}
  {% call statement('icetime_seed_write') %}{{ sql }}{% endcall %}
  {% call statement('icetime_seed_drop_staging') %}drop table if exists {{ staging }} purge{% endcall %}
  {{ return(sql) }}
{% endmacro %}


{% macro icetime_seed_insert(relation, columns, agate_table) %}
  {#- The seed's rows into `relation`, in batches of literals (bound values, never pasted),
      each cast to its column's type (icetime_seed_columns). -#}
  {%- for chunk in agate_table.rows | batch(get_batch_size()) -%}
    {%- set bindings = [] -%}
    {%- for row in chunk %}{% do bindings.extend(row) %}{% endfor -%}
    {%- set sql -%}
      insert into {{ relation }} values
      {% for row in chunk -%}
        ({%- for column in columns -%}
          cast({{ get_binding_char() }} as {{ column.type }}){{ ', ' if not loop.last }}
        {%- endfor -%}){{ ',' if not loop.last }}
      {% endfor -%}
    {%- endset -%}
    {%- do adapter.add_query(sql, bindings=bindings, abridge_sql_log=True) -%}
  {%- endfor -%}
{% endmacro %}

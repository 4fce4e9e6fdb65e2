{#- Model contracts on Iceberg: NOT NULL and CHECK constraints are enforced by the write itself.
    Iceberg has no CHECK constraints, and it cannot make an existing optional column required;
    so the contract's select (dbt's get_select_subquery: the contract's columns, in order) fails
    on a row that breaks a constraint, with a message naming it, and a failed CREATE OR REPLACE /
    MERGE / INSERT commits nothing (the table keeps its last good snapshot). unique,
    primary_key and foreign_key are not enforced (dbt warns, as for every adapter that cannot). -#}

{% macro icetime__contract_column(name) -%}
  {#- A contract column as the model's SQL names it (quoted when its config says so). -#}
  {{ return(adapter.quote(name) if (model.columns or {}).get(name, {}).get('quote') else name) }}
{%- endmacro %}

{% macro icetime__constraint_guards(model) -%}
  {#- [(condition that must not be false, message)] of the model's not_null and check
      constraints, column-level and model-level. -#}
  {%- set guards = [] -%}
  {%- set not_null = [] -%}
  {%- for name, column in (model.columns or {}).items() -%}
    {%- for constraint in column.get('constraints', []) -%}
      {%- if constraint.type == 'not_null' -%}
        {%- do not_null.append(name) -%}
      {%- elif constraint.type == 'check' and constraint.expression -%}
        {%- do guards.append((constraint.expression, 'CHECK constraint failed: ' ~ constraint.expression)) -%}
      {%- endif -%}
    {%- endfor -%}
  {%- endfor -%}
  {%- for constraint in model.get('constraints', []) -%}
    {%- if constraint.type == 'not_null' -%}
      {%- do not_null.extend(constraint.columns) -%}
    {%- elif constraint.type == 'check' and constraint.expression -%}
      {%- do guards.append((constraint.expression, 'CHECK constraint failed: ' ~ constraint.expression)) -%}
    {%- endif -%}
  {%- endfor -%}
  {%- set nulls = [] -%}
  {%- for name in not_null -%}
    {%- do nulls.append((icetime__contract_column(name) ~ ' is not null', 'NOT NULL constraint failed: column ' ~ name)) -%}
  {%- endfor -%}
  {{ return(nulls + guards) }}
{%- endmacro %}

{% macro icetime__get_select_subquery(sql) -%}
  {#- dbt's contract select, its first column guarded by the model's NOT NULL and CHECK
      constraints (SQL semantics: a CHECK that is null passes). The checks are in the select
      list, so they see exactly the rows written: a WHERE guard could be pushed below a join
      and fail on rows the join drops. dbt checks the contract's columns before this runs. -#}
  {%- set names = [] -%}
  {%- for name in model.columns -%}
    {%- do names.append(icetime__contract_column(name)) -%}
  {%- endfor -%}
  {%- set failures = [] -%}
  {%- for condition, message in icetime__constraint_guards(model) -%}
    {%- do failures.append('when (' ~ condition ~ ') is false then raise_error(' ~ adapter.icetime_quote_string(message) ~ ')') -%}
  {%- endfor -%}
  {%- set first = ('case ' ~ failures | join('\n    ') ~ '\n    else ' ~ names[0] ~ ' end as ' ~ names[0]) if failures else names[0] -%}
  {%- set guarded -%}
select
  {{ ([first] + names[1:]) | join(',\n  ') }}
from (
{{ sql }}
) as model_subq
  {%- endset -%}
  {{ return(guarded) }}
{%- endmacro %}


{% macro icetime__get_assert_columns_equivalent(sql) -%}
  {#- dbt's contract check (names, order-free; count; types), with one difference: a contract
      type without parameters (`decimal`, `numeric`, `dec`) accepts its type at any precision
      and scale, as it does on dbt's other adapters. Spark would read a bare `decimal` as
      decimal(10,0) and refuse a decimal(4,2) column. A type with parameters still has to
      match exactly. -#}
  {%- set declared_columns = model['columns'] -%}
  {%- if not declared_columns -%}
    {{ exceptions.raise_contract_error([], []) }}
  {%- endif -%}
  {%- set sql_columns = format_columns(get_column_schema_from_query(sql, config.get('sql_header', none))) -%}
  {%- set yaml_columns = format_columns(get_column_schema_from_query(get_empty_schema_sql(declared_columns))) -%}
  {%- if sql_columns | length != yaml_columns | length -%}
    {%- do exceptions.raise_contract_error(yaml_columns, sql_columns) -%}
  {%- endif -%}
  {%- set declared_types = {} -%}
  {%- for name, column in declared_columns.items() -%}
    {%- do declared_types.update({name | lower: (column.get('data_type') or '') | lower | trim}) -%}
  {%- endfor -%}
  {%- set yaml_by_name = {} -%}
  {%- for column in yaml_columns -%}{%- do yaml_by_name.update({column['name'] | lower: column}) -%}{%- endfor -%}
  {%- for sql_col in sql_columns -%}
    {%- set yaml_col = yaml_by_name.get(sql_col['name'] | lower) -%}
    {%- if yaml_col is none -%}
      {%- do exceptions.raise_contract_error(yaml_columns, sql_columns) -%}
    {%- endif -%}
    {%- set sql_type = sql_col['data_type'] | lower -%}
    {%- set any_precision = declared_types.get(sql_col['name'] | lower) in ('decimal', 'numeric', 'dec')
          and sql_type.startswith('decimal') -%}
    {%- if not any_precision and sql_col['formatted'] != yaml_col['formatted'] -%}
      {%- do exceptions.raise_contract_error(yaml_columns, sql_columns) -%}
    {%- endif -%}
  {%- endfor -%}
{%- endmacro %}

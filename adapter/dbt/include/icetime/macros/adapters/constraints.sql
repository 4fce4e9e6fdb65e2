{#- Model contracts on Iceberg: NOT NULL and CHECK constraints are enforced by the write itself.
    Iceberg has no CHECK constraints, and it cannot make an existing optional column required;
    so the enforced model's select is guarded: a row that breaks a constraint fails the
    statement with a message naming the constraint, and a failed CREATE OR REPLACE / MERGE /
    INSERT commits nothing (the table keeps its last good snapshot). unique, primary_key and
    foreign_key are not enforced (dbt warns, as for every adapter that cannot). -#}

{% macro icetime__constraint_guards(model) -%}
  {#- [(condition that must not be false, message)] of the model's not_null and check
      constraints, column-level and model-level. -#}
  {%- set guards = [] -%}
  {%- for name, column in (model.columns or {}).items() -%}
    {%- set quoted = adapter.quote(name) if column.get('quote') else name -%}
    {%- for constraint in column.get('constraints', []) -%}
      {%- if constraint.type == 'not_null' -%}
        {%- do guards.append((quoted ~ ' is not null', 'NOT NULL constraint failed: column ' ~ name)) -%}
      {%- elif constraint.type == 'check' and constraint.expression -%}
        {%- do guards.append((constraint.expression, 'CHECK constraint failed: ' ~ constraint.expression)) -%}
      {%- endif -%}
    {%- endfor -%}
  {%- endfor -%}
  {%- for constraint in model.get('constraints', []) -%}
    {%- if constraint.type == 'not_null' -%}
      {%- for name in constraint.columns -%}
        {%- set quoted = adapter.quote(name) if (model.columns or {}).get(name, {}).get('quote') else name -%}
        {%- do guards.append((quoted ~ ' is not null', 'NOT NULL constraint failed: column ' ~ name)) -%}
      {%- endfor -%}
    {%- elif constraint.type == 'check' and constraint.expression -%}
      {%- do guards.append((constraint.expression, 'CHECK constraint failed: ' ~ constraint.expression)) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(guards) }}
{%- endmacro %}

{% macro icetime__guarded_select(sql) -%}
  {#- The contract-enforced model's select, failing on the first row that breaks a constraint
      (SQL semantics: a CHECK that is null passes). The checks are in the select list, so they
      see exactly the rows written: a WHERE guard could be pushed below a join and fail on rows
      the join drops. A contract names every column, in order. -#}
  {%- set contract = config.get('contract') -%}
  {%- set guards = icetime__constraint_guards(model) if contract and contract.enforced else [] -%}
  {%- if not guards -%}
    {{ return(sql) }}
  {%- endif -%}
  {#- The contract's own check first, on the model's select: the guard names the contract's
      columns, and a select without them must get dbt's "missing in definition" table. -#}
  {{ get_assert_columns_equivalent(sql) }}
  {%- set names = [] -%}
  {%- for name, column in model.columns.items() -%}
    {%- do names.append(adapter.quote(name) if column.get('quote') else name) -%}
  {%- endfor -%}
  {%- set failures = [] -%}
  {%- for condition, message in guards -%}
    {%- do failures.append('when (' ~ condition ~ ') is false then raise_error(' ~ adapter.icetime_quote_string(message) ~ ')') -%}
  {%- endfor -%}
  {%- set guarded -%}
select
  case {{ failures | join('\n    ') }}
    else {{ names[0] }} end as {{ names[0] }}
  {%- for name in names[1:] %},
  {{ name }}
  {%- endfor %}
from (
{{ sql }}
) as icetime_guarded
  {%- endset -%}
  {{ return(guarded) }}
{%- endmacro %}

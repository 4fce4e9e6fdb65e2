{#- listagg with its `order by` and `limit`, which dbt-spark's ignores with a warning: Spark 3.5
    has no ordered string aggregate, so the rows are collected as (order keys..., value) structs,
    sorted by the keys and their directions (nulls last ascending, first descending, as in
    Postgres), then cut and joined. -#}

{% macro icetime__listagg(measure, delimiter_text, order_by_clause, limit_num) -%}
  {%- set keys = icetime__listagg_order_keys(order_by_clause) -%}
  {%- set distinct = measure.strip().lower().startswith('distinct ') -%}
  {%- set value = measure.strip()[9:] if distinct else measure -%}
  {%- if keys -%}
    {%- set fields = [] -%}
    {%- for key in keys -%}
      {%- do fields.append('(' ~ key.expression ~ ') as k' ~ loop.index0) -%}
    {%- endfor -%}
    {%- set collected -%}
      transform(array_sort(collect_list({{ 'distinct ' if distinct }}struct({{ fields | join(', ') }}, ({{ value }}) as v)),
        (l, r) -> {{ icetime__listagg_compare(keys, 0) }}), x -> x.v)
    {%- endset -%}
  {%- else -%}
    {%- set collected = 'collect_list(' ~ measure ~ ')' -%}
  {%- endif -%}
  {%- if limit_num -%}
    {%- set collected = 'slice(' ~ collected ~ ', 1, ' ~ limit_num ~ ')' -%}
  {%- endif -%}
  {{ return('array_join(' ~ collected ~ ', ' ~ delimiter_text ~ ')') }}
{%- endmacro %}

{% macro icetime__listagg_order_keys(order_by_clause) -%}
  {#- "order by a desc, b" -> [{expression: a, descending: true}, {expression: b, ...}]. Commas
      inside parentheses belong to their expression. -#}
  {%- set keys = [] -%}
  {%- if order_by_clause -%}
    {%- set text = order_by_clause.strip() -%}
    {%- if not text.lower().startswith('order by ') -%}
      {% do exceptions.raise_compiler_error("listagg: order_by_clause must start with 'order by'; got " ~ order_by_clause) %}
    {%- endif -%}
    {%- set parts = [] -%}
    {%- set state = {'depth': 0, 'current': ''} -%}
    {%- for char in text[9:] -%}
      {%- if char == ',' and state.depth == 0 -%}
        {%- do parts.append(state.current) -%}
        {%- do state.update({'current': ''}) -%}
      {%- else -%}
        {%- if char == '(' -%}{%- do state.update({'depth': state.depth + 1}) -%}{%- endif -%}
        {%- if char == ')' -%}{%- do state.update({'depth': state.depth - 1}) -%}{%- endif -%}
        {%- do state.update({'current': state.current ~ char}) -%}
      {%- endif -%}
    {%- endfor -%}
    {%- do parts.append(state.current) -%}
    {%- for part in parts -%}
      {%- set words = part.strip().split() -%}
      {%- set direction = words[-1].lower() if words else '' -%}
      {%- if direction in ['asc', 'desc'] -%}
        {%- do keys.append({'expression': words[:-1] | join(' '), 'descending': direction == 'desc'}) -%}
      {%- else -%}
        {%- do keys.append({'expression': part.strip(), 'descending': false}) -%}
      {%- endif -%}
    {%- endfor -%}
  {%- endif -%}
  {{ return(keys) }}
{%- endmacro %}

{% macro icetime__listagg_compare(keys, i) -%}
  {#- The comparator of array_sort over keys[i:]: -1, 0 or 1. -#}
  {%- if i >= keys | length -%}
    0
  {%- else -%}
    {%- set k = 'k' ~ i -%}
    {%- set up = '-1' if not keys[i].descending else '1' -%}
    {%- set down = '1' if not keys[i].descending else '-1' -%}
    case when l.{{ k }} is null and r.{{ k }} is null then {{ icetime__listagg_compare(keys, i + 1) }}
      when l.{{ k }} is null then {{ down }} when r.{{ k }} is null then {{ up }}
      when l.{{ k }} < r.{{ k }} then {{ up }} when l.{{ k }} > r.{{ k }} then {{ down }}
      else {{ icetime__listagg_compare(keys, i + 1) }} end
  {%- endif -%}
{%- endmacro %}

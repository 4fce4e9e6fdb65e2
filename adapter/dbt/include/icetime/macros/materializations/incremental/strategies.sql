{#- The incremental strategies of dbt-spark's incremental materialization, for Iceberg tables:
    one get_incremental_<strategy>_sql(arg_dict) macro each, and the SQL they share. -#}

{% macro dbt_spark_validate_get_incremental_strategy(raw_strategy, file_format) %}
  {#- icetime's strategies, or any project-defined get_incremental_<name>_sql; checked before
      the first statement runs. file_format is always iceberg here. -#}
  {%- set accepted = adapter.valid_incremental_strategies() -%}
  {%- set macro_name = 'get_incremental_' ~ (raw_strategy | string | replace('+', '_')) ~ '_sql' -%}
  {%- if raw_strategy not in accepted and macro_name not in context -%}
    {% do exceptions.raise_compiler_error(
      'dbt could not find an incremental strategy macro with the name "' ~ macro_name ~ '": '
      ~ "incremental_strategy '" ~ raw_strategy ~ "' is not known. Accepted: "
      ~ accepted | join(', ') ~ ", or a strategy your project defines as a macro of that name.") %}
  {%- endif -%}
  {% do return(raw_strategy) %}
{% endmacro %}

{% macro dbt_spark_get_incremental_sql(strategy, source, target, existing, unique_key, incremental_predicates) %}
  {#- Every strategy goes through dbt's get_incremental_<strategy>_sql(arg_dict) convention,
      so each one is a single dispatched macro that a project can override. -#}
  {%- set strategy_sql = adapter.get_incremental_strategy_macro(context, strategy) -%}
  {{ strategy_sql({
      'target_relation': target,
      'temp_relation': source,
      'existing_relation': existing,
      'unique_key': unique_key,
      'dest_columns': none,
      'incremental_predicates': incremental_predicates,
  }) }}
{% endmacro %}

{% macro icetime__get_incremental_append_sql(arg_dict) %}
  {{ get_insert_into_sql(arg_dict['temp_relation'], arg_dict['target_relation']) }}
{% endmacro %}

{% macro icetime__get_incremental_merge_sql(arg_dict) %}
  {{ get_merge_sql(arg_dict['target_relation'], arg_dict['temp_relation'], arg_dict['unique_key'],
                   dest_columns=none, incremental_predicates=arg_dict['incremental_predicates']) }}
{% endmacro %}

{% macro icetime__get_incremental_insert_overwrite_sql(arg_dict) %}
  {{ get_insert_overwrite_sql(arg_dict['temp_relation'], arg_dict['target_relation'], arg_dict['existing_relation']) }}
{% endmacro %}

{% macro icetime__get_incremental_microbatch_sql(arg_dict) %}
  {#- A batch replaces its event-time window. Partitioned by the batch's grain: the partitions it
      writes are overwritten (dbt-spark's way). Otherwise one atomic MERGE that matches nothing:
      the batch's rows are inserted, and the target's rows in the window that the batch does not
      bring are deleted (WHEN NOT MATCHED BY SOURCE), so a re-run batch never doubles. -#}
  {%- if config.get('partition_by') -%}
    {{ icetime__get_incremental_insert_overwrite_sql(arg_dict) }}
  {%- else -%}
    {%- set target = arg_dict['target_relation'] -%}
    {%- set event_time = adapter.icetime_quote_identifier(config.get('event_time')) -%}
    {%- set window = ['true'] -%}
    {%- if model.batch and model.batch.event_time_start -%}
      {%- do window.append('DBT_INTERNAL_DEST.' ~ event_time ~ " >= timestamp'" ~ model.batch.event_time_start ~ "'") -%}
    {%- endif -%}
    {%- if model.batch and model.batch.event_time_end -%}
      {%- do window.append('DBT_INTERNAL_DEST.' ~ event_time ~ " < timestamp'" ~ model.batch.event_time_end ~ "'") -%}
    {%- endif -%}
    {%- for predicate in arg_dict['incremental_predicates'] or [] -%}
      {%- do window.append('(' ~ predicate ~ ')') -%}
    {%- endfor -%}
    merge into {{ target }} as DBT_INTERNAL_DEST
    using {{ arg_dict['temp_relation'] }} as DBT_INTERNAL_SOURCE
    on false
    when not matched then insert *
    when not matched by source and {{ window | join(' and ') }} then delete
  {%- endif -%}
{% endmacro %}

{% macro icetime__get_incremental_delete_insert_sql(arg_dict) %}
  {#- One atomic MERGE: source rows tagged 'delete' remove every target row with their key
      (within the incremental predicates); rows tagged 'insert' never match and are added.
      Source columns are renamed so that unqualified names in predicates mean the target's. -#}
  {%- set target = arg_dict['target_relation'] -%}
  {%- set source = arg_dict['temp_relation'] -%}
  {%- set unique_key = arg_dict['unique_key'] -%}
  {%- set predicates = arg_dict['incremental_predicates'] or [] -%}
  {%- if not unique_key -%}
    {% do exceptions.raise_compiler_error("The delete+insert strategy needs a unique_key; got " ~ unique_key) %}
  {%- endif -%}
  {%- set keys = ([unique_key] if unique_key is string else unique_key) | map('lower') | list -%}
  {%- set columns = adapter.get_columns_in_relation(target) -%}
  merge into {{ target }} as DBT_INTERNAL_DEST
  using (
    select {% for c in columns %}{{ c.quoted }} as {{ icetime_source_column(c.name) }}, {% endfor -%}
      'insert' as dbt_icetime_action
    from {{ source }}
    union all
    select distinct {% for c in columns -%}
      {%- if c.name | lower in keys %}{{ c.quoted }}{% else %}null{% endif %} as {{ icetime_source_column(c.name) }}, {% endfor -%}
      'delete' as dbt_icetime_action
    from {{ source }}
  ) as DBT_INTERNAL_SOURCE
  on DBT_INTERNAL_SOURCE.dbt_icetime_action = 'delete'
    {%- for key in keys %}
    and DBT_INTERNAL_SOURCE.{{ icetime_source_column(key) }} = DBT_INTERNAL_DEST.{{ key }}
    {%- endfor %}
    {%- for predicate in predicates %}
    and {{ predicate }}
    {%- endfor %}
  when matched then delete
  when not matched and DBT_INTERNAL_SOURCE.dbt_icetime_action = 'insert' then
    insert ({{ columns | map(attribute='quoted') | join(', ') }})
    values ({% for c in columns %}DBT_INTERNAL_SOURCE.{{ icetime_source_column(c.name) }}{{ ', ' if not loop.last }}{% endfor %})
{% endmacro %}

{% macro icetime_source_column(name) -%}
  `dbt_icetime_src__{{ name | replace('`', '``') }}`
{%- endmacro %}

{% macro get_insert_into_sql(source_relation, target_relation, source_columns=none, target_columns=none) %}
  {#- Append by column name: a target column the new query no longer has is written as null.
      source_columns, target_columns: the columns when the caller knows them already. -#}
  {%- set source_columns = source_columns if source_columns is not none else adapter.get_columns_in_relation(source_relation) -%}
  {%- set target_columns = target_columns if target_columns is not none else adapter.get_columns_in_relation(target_relation) -%}
  {%- set source_names = source_columns | map(attribute='name') | map('lower') | list -%}
  insert into {{ target_relation }}
  select
  {%- for column in target_columns %}
    {% if column.name | lower in source_names %}{{ column.quoted }}{% else %}cast(null as {{ column.data_type }}) as {{ column.quoted }}{% endif %}
    {{- ',' if not loop.last }}
  {%- endfor %}
  from {{ source_relation }}
{% endmacro %}

{% macro icetime__get_merge_sql(target, source, unique_key, dest_columns, incremental_predicates) %}
  {#- dbt-spark's MERGE with explicit column lists matched by name, so a target column the
      query no longer selects (on_schema_change: append_new_columns / ignore) keeps its values
      on update and is null on insert, instead of failing `UPDATE SET *`. -#}
  {%- set predicates = [] + (incremental_predicates or []) -%}
  {%- set source_names = adapter.get_columns_in_relation(source) | map(attribute='name') | map('lower') | list -%}
  {%- set shared = [] -%}
  {%- for column in adapter.get_columns_in_relation(target) -%}
    {%- if column.name | lower in source_names %}{% do shared.append(column) %}{% endif -%}
  {%- endfor -%}
  {#- dbt-spark answers none for "every column", meaning `*`; spell the shared ones out. -#}
  {%- set update_columns = get_merge_update_columns(
        config.get('merge_update_columns'), config.get('merge_exclude_columns'), shared)
      or shared | map(attribute='quoted') | list -%}
  {%- if unique_key -%}
    {%- for key in ([unique_key] if unique_key is string else unique_key) -%}
      {%- do predicates.append('DBT_INTERNAL_SOURCE.' ~ key ~ ' = DBT_INTERNAL_DEST.' ~ key) -%}
    {%- endfor -%}
  {%- else -%}
    {%- do predicates.append('FALSE') -%}
  {%- endif -%}
  {{ sql_header if sql_header is not none }}
  merge into {{ target }} as DBT_INTERNAL_DEST
  using {{ source }} as DBT_INTERNAL_SOURCE
  on {{ predicates | join(' and ') }}
  {%- if update_columns %}
  when matched then update set
    {%- for name in update_columns %}
    {{ name }} = DBT_INTERNAL_SOURCE.{{ name }}{{ ',' if not loop.last }}
    {%- endfor %}
  {%- endif %}
  when not matched then insert ({{ shared | map(attribute='quoted') | join(', ') }})
    values ({% for c in shared %}DBT_INTERNAL_SOURCE.{{ c.quoted }}{{ ', ' if not loop.last }}{% endfor %})
{% endmacro %}

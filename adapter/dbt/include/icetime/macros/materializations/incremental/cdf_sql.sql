{#- The SQL a CDF run writes with: what lands in the target, and the MERGE statements that apply
    a run's changes (merge mode) or recompute the groups they touch (cdf_recompute_keys). -#}

{% macro icetime_cdf_payload_columns(columns, mode) %}
  {#- Of the model's columns, those that land in the target: all of them for a change log
      (append), all but the change metadata otherwise. Checks the model passes through what its
      mode needs. -#}
  {%- set change_columns = ['_change_type', '_commit_snapshot_id', '_commit_timestamp', '_change_ordinal'] -%}
  {%- set names = columns | map(attribute='name') | map('lower') | list -%}
  {%- set needed = {'merge': ['_change_type'], 'append': ['_change_type', '_commit_snapshot_id'], 'recompute': []}[mode] -%}
  {%- set missing = needed | reject('in', names) | list -%}
  {%- if missing -%}
    {% do exceptions.raise_compiler_error(
      "CDF model " ~ model['unique_id'] ~ " must select " ~ missing | join(', ')
      ~ " from icetime.changes(...) (" ~ ("it decides what each row does to the target" if mode == 'merge' else "a change log keeps each change's commit, and an interrupted run is repaired by it")
      ~ "); its query returns only: " ~ names | join(', ') ~ ".") %}
  {%- endif -%}
  {%- if mode == 'merge' -%}
    {{ return(columns | rejectattr('name', 'in', change_columns) | list) }}
  {%- endif -%}
  {{ return(columns) }}
{% endmacro %}


{% macro icetime_cdf_initial_sql(tmp_relation, columns, mode) %}
  select {{ columns | map(attribute='quoted') | join(', ') }} from {{ tmp_relation }}
  {%- if mode == 'merge' %} where _change_type in ('insert', 'update_after'){% endif %}
{% endmacro %}


{% macro icetime_cdf_merge_sql(target, target_columns, changes, change_columns, payload_columns, unique_key, bounds=none) %}
  {#- The net effect per key, in one MERGE: the last change row that survived the model's
      filters decides (commit order when the model passes _commit_timestamp/_change_ordinal
      through; within a commit, and in the net feed, an upsert outranks a delete).
      change_columns: the columns of `changes` (the model's rows); payload_columns: those of
      them that land in the target; target_columns: the target's. -#}
  {%- set keys = icetime_cdf_quoted(unique_key) -%}
  {%- set names = change_columns | map(attribute='name') | map('lower') | list -%}
  {%- set payload_names = payload_columns | map(attribute='name') | map('lower') | list -%}
  {%- set columns = target_columns | selectattr('name', 'in', payload_names) | list -%}
  {%- set order = [] -%}
  {%- if '_commit_timestamp' in names %}{% do order.append('_commit_timestamp desc') %}{% endif -%}
  {%- if '_change_ordinal' in names %}{% do order.append('_change_ordinal desc') %}{% endif -%}
  {%- do order.append("case when _change_type in ('insert', 'update_after') then 1 else 0 end desc") -%}
  merge into {{ target }} as DBT_INTERNAL_DEST
  using (
    select * from (
      select *, row_number() over (partition by {{ keys | join(', ') }} order by {{ order | join(', ') }}) as _icetime_rank
      from {{ changes }}
    ) where _icetime_rank = 1
  ) as DBT_INTERNAL_SOURCE
  on {% for key in keys %}DBT_INTERNAL_SOURCE.{{ key }} = DBT_INTERNAL_DEST.{{ key }}{{ ' and ' if not loop.last }}{% endfor %}
  {%- if bounds %}
  {#- Literal bounds of the changed keys: Iceberg skips target files outside them. #}
    and DBT_INTERNAL_DEST.{{ keys[0] }} between {{ bounds[0] }} and {{ bounds[1] }}
  {%- endif %}
  when matched and DBT_INTERNAL_SOURCE._change_type in ('delete', 'update_before') then delete
  when matched then update set
    {%- for column in columns %}
    {{ column.quoted }} = DBT_INTERNAL_SOURCE.{{ column.quoted }}{{ ',' if not loop.last }}
    {%- endfor %}
  when not matched and DBT_INTERNAL_SOURCE._change_type in ('insert', 'update_after') then
    insert ({{ columns | map(attribute='quoted') | join(', ') }})
    values ({% for column in columns %}DBT_INTERNAL_SOURCE.{{ column.quoted }}{{ ', ' if not loop.last }}{% endfor %})
{% endmacro %}


{% macro icetime_cdf_recompute_sql(target, target_columns, fresh, fresh_columns, key_views, recompute_keys, target_bound=none) %}
  {#- Recompute only the groups whose keys changed upstream (before or after images): merge
      the recomputed groups, delete the groups that no longer exist. fresh_columns: the columns
      of `fresh`, the model's rows; target_columns: the target's. -#}
  {%- set keys = icetime_cdf_quoted(recompute_keys) -%}
  {%- set payload_names = fresh_columns | map(attribute='name') | map('lower') | list -%}
  {%- set columns = target_columns | selectattr('name', 'in', payload_names) | list -%}
  {%- set changed -%}
    (select distinct * from ({% for view in key_views %}select {{ keys | join(', ') }} from `{{ view }}`{{ ' union all ' if not loop.last }}{% endfor %}))
  {%- endset -%}
  merge into {{ target }} as DBT_INTERNAL_DEST
  using (
    select {% for key in keys %}changed.{{ key }} as _icetime_key_{{ loop.index }}, {% endfor %}recomputed.*
    from {{ changed }} as changed
    left join (
      select groups.*, true as _icetime_present
      from {{ fresh }} as groups left semi join {{ changed }} as wanted
        on {% for key in keys %}groups.{{ key }} <=> wanted.{{ key }}{{ ' and ' if not loop.last }}{% endfor %}
    ) as recomputed
      on {% for key in keys %}changed.{{ key }} <=> recomputed.{{ key }}{{ ' and ' if not loop.last }}{% endfor %}
  ) as DBT_INTERNAL_SOURCE
  on {% for key in keys %}DBT_INTERNAL_SOURCE._icetime_key_{{ loop.index }} <=> DBT_INTERNAL_DEST.{{ key }}{{ ' and ' if not loop.last }}{% endfor %}
  {%- if target_bound %}
  {#- Literal bounds every recomputed key meets: Iceberg skips target files outside them. #}
    and {{ target_bound }}
  {%- endif %}
  when matched and DBT_INTERNAL_SOURCE._icetime_present is null then delete
  when matched then update set
    {%- for column in columns %}
    {{ column.quoted }} = DBT_INTERNAL_SOURCE.{{ column.quoted }}{{ ',' if not loop.last }}
    {%- endfor %}
  when not matched and DBT_INTERNAL_SOURCE._icetime_present then
    insert ({{ columns | map(attribute='quoted') | join(', ') }})
    values ({% for column in columns %}DBT_INTERNAL_SOURCE.{{ column.quoted }}{{ ', ' if not loop.last }}{% endfor %})
{% endmacro %}


{% macro icetime_cdf_replace_keys(statements) %}
  {#- A model kept equal to its query: its affected keys' rows deleted and their new rows
      inserted on a branch of the target, then main fast-forwarded to it, one move of main
      (AffectedKeys.replace_sql says why not a MERGE). The fast-forward is the data commit. -#}
  {% call statement('icetime_cdf_branch') %}{{ statements['branch'] }}{% endcall %}
  {% call statement('icetime_cdf_delete') %}{{ statements['delete'] }}{% endcall %}
  {% do adapter.icetime_fault('between_delete_and_insert') %}
  {% call statement('icetime_cdf_insert') %}{{ statements['insert'] }}{% endcall %}
  {% call statement('main') %}{{ statements['publish'] }}{% endcall %}
  {% call statement('icetime_cdf_branch_drop') %}{{ statements['drop'] }}{% endcall %}
{% endmacro %}


{% macro icetime_cdf_unquoted_keys(names) %}
  {{ return(([names] if names is string else names) | map('trim') | list) }}
{% endmacro %}


{% macro icetime_cdf_quoted(names) %}
  {%- set quoted = [] -%}
  {%- for name in icetime_cdf_unquoted_keys(names) -%}
    {%- do quoted.append(adapter.icetime_quote_identifier(name)) -%}
  {%- endfor -%}
  {{ return(quoted) }}
{% endmacro %}

{#- incremental_strategy='cdf': incremental models driven by snapshot diffs.
    The model reads icetime.changes(ref(...)) (compiled into a temporary view of change rows),
    or, with cdf_recompute_keys, plain SQL over its upstreams. See docs/flow/cdf.md. -#}

{% materialization incremental, adapter='icetime', supported_languages=['sql', 'python'] -%}
  {%- if config.get('incremental_strategy') == 'cdf' -%}
    {{ return(icetime_cdf_materialization()) }}
  {%- else -%}
    {{ return(materialization_incremental_spark()) }}
  {%- endif -%}
{%- endmaterialization %}


{% macro icetime_cdf_materialization() %}
  {%- if model['language'] != 'sql' -%}
    {% do exceptions.raise_compiler_error("CDF model " ~ model['unique_id'] ~ " must be a SQL model; Python models are not supported by incremental_strategy 'cdf'.") %}
  {%- endif -%}
  {%- set on_schema_change = incremental_validate_on_schema_change(config.get('on_schema_change'), default='ignore') -%}
  {%- set existing_relation = load_relation(this) -%}
  {%- set run = adapter.icetime_cdf_prepare(model, graph, should_full_refresh()) -%}
  {%- set tmp_relation = this.incorporate(path={"identifier": this.identifier ~ '__dbt_tmp'}).include(database=false, schema=false) -%}
  {%- set payload_relation = this.incorporate(path={"identifier": this.identifier ~ '__icetime_payload'}).include(database=false, schema=false) -%}
  {%- set committed = [] -%}

  {{ run_hooks(pre_hooks) }}

  {%- if run.full or existing_relation is none or existing_relation.is_view -%}
    {{ log("icetime: building " ~ this ~ " from scratch (" ~ (run.reason or 'replacing a view') ~ ")", info=true) }}
    {%- if existing_relation is not none and existing_relation.is_view -%}
      {% do adapter.drop_relation(existing_relation) %}
    {%- elif existing_relation is not none -%}
      {#- Forget the old watermark first: a run killed after it rebuilds again, never resumes. -#}
      {% call statement('icetime_cdf_forget') -%}
        alter table {{ this }} unset tblproperties if exists ({{ adapter.icetime_quote_string('icetime.cdf.state') }})
      {%- endcall %}
    {%- endif -%}
    {% call statement('create_tmp_relation') %}{{ create_table_as(True, tmp_relation, compiled_code) }}{% endcall %}
    {%- set columns = icetime_cdf_payload_columns(adapter.get_columns_in_relation(tmp_relation), run.mode) -%}
    {% do adapter.icetime_cdf_fault('before_write') %}
    {% do adapter.icetime_cdf_fault('during_write') %}
    {%- call statement('main') -%}
      {{ create_table_as(False, this, icetime_cdf_initial_sql(tmp_relation, columns, run.mode)) }}
    {%- endcall -%}
    {% do committed.append(true) %}
    {% do persist_constraints(this, model) %}
  {%- elif not run.has_changes -%}
    {{ log("icetime: " ~ this ~ ": " ~ run.message, info=true) }}
    {%- call noop_statement('main', 'NO CHANGES') -%}-- {{ run.message }}{%- endcall -%}
    {#- Only compactions since the watermark: move it (a metadata update, no data read). -#}
    {%- if run.moves %}{% do committed.append(true) %}{% endif -%}
  {%- else -%}
    {% call statement('create_tmp_relation') %}{{ create_table_as(True, tmp_relation, compiled_code) }}{% endcall %}
    {#- The change rows are read once, by the first statement that needs them (the key bounds,
        or the write): the write reuses them. -#}
    {% call statement('icetime_cdf_cache') %}cache lazy table {{ tmp_relation }}{% endcall %}
    {%- set model_columns = adapter.get_columns_in_relation(tmp_relation) -%}
    {%- set columns = icetime_cdf_payload_columns(model_columns, run.mode) -%}
    {#- The payload (what lands in the target) serves the schema check and the writes of append
        and recompute; a merge reads the model's rows itself. -#}
    {%- if run.mode != 'merge' or on_schema_change != 'ignore' -%}
      {% call statement('create_payload_relation') -%}
        create or replace temporary view {{ payload_relation }} as
        select {{ columns | map(attribute='quoted') | join(', ') }} from {{ tmp_relation }}
      {%- endcall %}
      {%- do process_schema_changes(on_schema_change, payload_relation, existing_relation) -%}
    {%- endif -%}
    {% do adapter.icetime_cdf_fault('before_write') %}
    {%- if run.mode == 'append' and run.recovering and run.range_snapshot_ids -%}
      {#- An interrupted run may have appended part of this range already: take it out first. -#}
      {% call statement('icetime_cdf_recover') -%}
        delete from {{ this }} where _commit_snapshot_id in ({{ run.range_snapshot_ids | join(', ') }})
      {%- endcall %}
    {%- endif -%}
    {%- set bounds = none -%}
    {%- if run.mode == 'merge' -%}
      {%- set first_key = icetime_cdf_unquoted_keys(config.get('unique_key'))[0] -%}
      {%- set bounds = adapter.icetime_key_bounds(tmp_relation, first_key) -%}
    {%- endif -%}
    {% do adapter.icetime_cdf_fault('during_write') %}
    {%- call statement('main') -%}
      {%- if run.mode == 'merge' -%}
        {{ icetime_cdf_merge_sql(this, tmp_relation, model_columns, columns, config.get('unique_key'), bounds) }}
      {%- elif run.mode == 'append' -%}
        {{ get_insert_into_sql(payload_relation, this) }}
      {%- else -%}
        {{ icetime_cdf_recompute_sql(this, payload_relation, run.views, config.get('cdf_recompute_keys')) }}
      {%- endif -%}
    {%- endcall -%}
    {% do committed.append(true) %}
    {% call statement('icetime_cdf_uncache') %}uncache table if exists {{ tmp_relation }}{% endcall %}
  {%- endif -%}

  {% do adapter.icetime_cdf_finish(model, committed | length > 0) %}
  {% do apply_grants(this, config.get('grants'), should_revoke(existing_relation, full_refresh_mode=run.full)) %}
  {% do persist_docs(this, model) %}
  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [this]}) }}
{% endmacro %}


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


{% macro icetime_cdf_merge_sql(target, changes, change_columns, payload_columns, unique_key, bounds=none) %}
  {#- The net effect per key, in one MERGE: the last change row that survived the model's
      filters decides (commit order when the model passes _commit_timestamp/_change_ordinal
      through; within a commit, and in the net feed, an upsert outranks a delete).
      change_columns: the columns of `changes` (the model's rows); payload_columns: those of
      them that land in the target. -#}
  {%- set keys = icetime_cdf_quoted(unique_key) -%}
  {%- set names = change_columns | map(attribute='name') | map('lower') | list -%}
  {%- set payload_names = payload_columns | map(attribute='name') | map('lower') | list -%}
  {%- set columns = adapter.get_columns_in_relation(target) | selectattr('name', 'in', payload_names) | list -%}
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


{% macro icetime_cdf_recompute_sql(target, fresh, key_views, recompute_keys) %}
  {#- Recompute only the groups whose keys changed upstream (before or after images): merge
      the recomputed groups, delete the groups that no longer exist. -#}
  {%- set keys = icetime_cdf_quoted(recompute_keys) -%}
  {%- set payload_names = adapter.get_columns_in_relation(fresh) | map(attribute='name') | map('lower') | list -%}
  {%- set columns = adapter.get_columns_in_relation(target) | selectattr('name', 'in', payload_names) | list -%}
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
  when matched and DBT_INTERNAL_SOURCE._icetime_present is null then delete
  when matched then update set
    {%- for column in columns %}
    {{ column.quoted }} = DBT_INTERNAL_SOURCE.{{ column.quoted }}{{ ',' if not loop.last }}
    {%- endfor %}
  when not matched and DBT_INTERNAL_SOURCE._icetime_present then
    insert ({{ columns | map(attribute='quoted') | join(', ') }})
    values ({% for column in columns %}DBT_INTERNAL_SOURCE.{{ column.quoted }}{{ ', ' if not loop.last }}{% endfor %})
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

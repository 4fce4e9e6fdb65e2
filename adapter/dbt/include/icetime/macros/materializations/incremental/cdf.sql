{#- incremental_strategy='cdf': incremental models driven by snapshot diffs, as a recipe of named
    steps. The model reads icetime.changes(ref(...)) (its change rows, which run.sql defines in
    a WITH clause around the model's query), or, with cdf_recompute_keys, plain SQL over its
    upstreams; a Python model reads dbt.changes(dbt.ref(...)), and its query is its
    DataFrame's view. The adapter (cdf/session.py) plans the run; the tail is the change engine's
    (changes.sql). See docs/flow/cdf.md. -#}

{% macro icetime_cdf_materialization(query=none) %}
  {#- query: a Python model's (its DataFrame's view, python.sql), whose pre-hooks ran before
      its code. -#}
  {%- set on_schema_change = incremental_validate_on_schema_change(config.get('on_schema_change'), default='ignore') -%}
  {%- set existing_relation = load_relation(this) -%}
  {%- set run = adapter.icetime_cdf_prepare(model, graph, should_full_refresh(), query) -%}
  {%- set committed = [] -%}

  {%- if query is none -%}{{ run_hooks(pre_hooks) }}{%- endif -%}
  {%- set target_table = existing_relation is not none and not existing_relation.is_view -%}
  {%- if run.empty and target_table -%}
    {#- `--empty` on an existing target: left alone, watermark and all. -#}
    {%- call noop_statement('main', 'EMPTY') -%}-- --empty: {{ this }} left as it is{%- endcall -%}
  {%- elif run.full or not target_table -%}
    {%- do icetime_cdf_rebuild(run, existing_relation) -%}
    {%- do committed.append(true) -%}
  {%- elif not run.has_changes -%}
    {#- Only compactions since the watermark: move it (a metadata update, no data read). -#}
    {%- do icetime_changes_none(run) -%}
    {%- if run.moves %}{% do committed.append(true) %}{% endif -%}
  {%- elif run.grouped -%}
    {%- do icetime_cdf_apply_groups() -%}
    {%- do committed.append(true) -%}
  {%- else -%}
    {%- do icetime_cdf_apply_changes(run, existing_relation, on_schema_change) -%}
    {%- do committed.append(true) -%}
  {%- endif -%}
  {{ return(icetime_changes_end(run, existing_relation, committed | length > 0)) }}
{% endmacro %}


{% macro icetime_cdf_query(run) %}
  {#- The model's query (with its change rows), where a relation goes. -#}
  {{ return('(\n' ~ run.sql ~ '\n) as icetime_changes') }}
{% endmacro %}


{% macro icetime_cdf_rebuild(run, existing_relation) %}
  {#- A first run, --full-refresh, a history gap rebuilt, or a view in the way: the target is
      built from every current row of the upstreams. Under --empty a missing target is built
      the same way from no rows, and records no watermark. -#}
  {%- if run.by_cost -%}
    {{ log("icetime: rebuilding " ~ this ~ ": cheaper than reading its upstream's changes (" ~ run.reason ~ ")", info=true) }}
  {%- else -%}
    {{ log("icetime: building " ~ this ~ " from scratch (" ~ (run.reason or 'replacing a view') ~ ")", info=true) }}
  {%- endif -%}
  {#- The new watermarks are committed with the data (in its summary: icetime_changes_write):
      a rebuild killed before its commit leaves the old table with its old watermarks, one
      that commits is recorded. -#}
  {%- if existing_relation is not none and existing_relation.is_view -%}
    {% do adapter.drop_relation(existing_relation) %}
  {%- endif -%}
  {%- if run.grouped and not run.by_choice -%}
    {%- do icetime_cdf_rebuild_groups() -%}
    {% do persist_constraints(this, model) %}
    {{ return(none) }}
  {%- elif run.mode == 'recompute' -%}
    {#- The model's query is the table, as a `table` model's is: no view, no describe. A
        grouped model rebuilt by cdf_refresh (auto found it cheaper, or full) builds its table
        alone: its group state goes, and the next run that reads changes builds both again. -#}
    {%- if run.grouped -%}
      {%- set groups = adapter.icetime_cdf_step("groups_table", model) -%}
      {% do adapter.drop_relation(this.incorporate(path={"identifier": groups}, type='table')) %}
    {%- endif -%}
    {%- set sql = compiled_code -%}
  {%- else -%}
    {#- The upserts (merge) or every change row (append): the model's columns are checked and
        a merge's change columns left out (its query described, with no view to make). -#}
    {%- set model_columns = adapter.icetime_query_columns(run.sql, config.get('sql_header')) -%}
    {%- set columns = icetime_cdf_payload_columns(model_columns, run.mode) -%}
    {%- set sql = icetime_cdf_initial_sql(icetime_cdf_query(run), columns, run.mode) -%}
  {%- endif -%}
  {%- do icetime_changes_write(create_table_as(False, this, sql)) -%}
  {% do persist_constraints(this, model) %}
{% endmacro %}


{% macro icetime_cdf_apply_changes(run, existing_relation, on_schema_change) %}
  {#- In merge mode two statements read the change rows (the key bounds, then the write): they
      are cached lazily, so the first computes them and the write reuses them, until the run
      ends or fails (the view is dropped with the run's others). Append and
      recompute read them once, in the write: no cache. A change log with no schema check
      reads the model's query itself: no view to make and describe (~0.05 s). -#}
  {%- if run.mode == 'append' and on_schema_change == 'ignore' -%}
    {%- set model_columns = adapter.icetime_query_columns(run.sql, config.get('sql_header')) -%}
    {%- set changes = icetime_cdf_query(run) -%}
  {%- else -%}
    {%- set changes = icetime_changes_temp_relation('__dbt_tmp') -%}
    {% call statement('create_tmp_relation') %}{{ create_table_as(True, changes, run.sql) }}{% endcall %}
    {%- if run.mode == 'merge' -%}
      {% do adapter.icetime_cdf_step("cache", model, changes) %}
    {%- endif -%}
    {%- set model_columns = adapter.get_columns_in_relation(changes) -%}
  {%- endif -%}
  {%- set columns = icetime_cdf_payload_columns(model_columns, run.mode) -%}
  {%- set payload = icetime_cdf_payload(run, changes, columns, existing_relation, on_schema_change) -%}
  {% do adapter.icetime_fault('before_write') %}
  {%- do icetime_cdf_recover_append(run) -%}
  {%- set bounds = none -%}
  {%- if run.mode == 'merge' -%}
    {%- set first_key = icetime_cdf_unquoted_keys(config.get('unique_key'))[0] -%}
    {%- set bounds = adapter.icetime_cdf_step("key_bounds", changes, first_key) -%}
  {%- endif -%}
  {%- set target_columns = icetime_cdf_target_columns() -%}
  {%- set recomputed = {'rows': none, 'target_bound': none} -%}
  {%- if run['keys'] -%}
    {#- Kept equal to its query: the affected keys' new rows, one per key (checked), cached,
        and literal bounds of the keys for the scan of the target. -#}
    {%- set recomputed = adapter.icetime_cdf_step("recomputed", model, changes) -%}
  {%- endif -%}
  {#- The write's commit carries the new watermarks (a replace's: its insert, on the branch
      main is fast-forwarded to). -#}
  {% do adapter.icetime_change_step("carry", model) %}
  {% do adapter.icetime_fault('during_write') %}
  {%- set replace = none -%}
  {%- if run['keys'] -%}
    {%- set payload_names = columns | map(attribute='name') | map('lower') | list -%}
    {%- set written = target_columns | selectattr('name', 'in', payload_names) | map(attribute='name') | list -%}
    {%- set replace = adapter.icetime_cdf_step("replace_sql", model, written) -%}
  {%- endif -%}
  {%- if replace -%}
    {%- do icetime_cdf_replace_keys(replace) -%}
  {%- else -%}
  {%- call statement('main') -%}
    {%- if run.mode == 'merge' -%}
      {{ icetime_cdf_merge_sql(this, target_columns, changes, model_columns, columns, config.get('unique_key'), bounds) }}
    {%- elif run.mode == 'append' -%}
      {{ get_insert_into_sql(payload, this, columns, target_columns) }}
    {%- else -%}
      {{ icetime_cdf_recompute_sql(this, target_columns, recomputed['rows'] or payload, columns, run.views, run['keys'] or config.get('cdf_recompute_keys'), recomputed['target_bound']) }}
    {%- endif -%}
  {%- endcall -%}
  {%- endif -%}
{% endmacro %}


{% macro icetime_cdf_rebuild_groups() %}
  {#- A grouped model maintained from deltas (planners/grouped.py): its group state table from
      the upstreams at the run's snapshots, then its rows from the state, in its query's types. -#}
  {%- set query_columns = adapter.icetime_query_columns(compiled_code, config.get('sql_header')) -%}
  {%- set writes = adapter.icetime_cdf_step("groups_rebuild", model, query_columns) -%}
  {%- do icetime_cdf_write_groups(writes['state'], create_table_as(False, this, writes['rows'])) -%}
{% endmacro %}


{% macro icetime_cdf_target_columns() %}
  {#- The target's columns: from the metadata its run read, else a DESCRIBE. -#}
  {%- set found = adapter.icetime_change_step("target_columns", model) -%}
  {{ return(adapter.get_columns_in_relation(this) if found is none else found) }}
{% endmacro %}


{% macro icetime_cdf_apply_groups() %}
  {#- A grouped model's changes: its touched groups' state updated from the signed change rows
      (cached), merged into the group state table, then their rows into the model's table. -#}
  {%- set target_columns = icetime_cdf_target_columns() -%}
  {%- set writes = adapter.icetime_cdf_step("groups_apply", model, target_columns) -%}
  {%- do icetime_cdf_write_groups(writes['state'], writes['target']) -%}
{% endmacro %}


{% macro icetime_cdf_write_groups(state_sql, target_sql) %}
  {#- The group state's write, then the model's table's (the data commit). Both commits carry
      the new watermarks; a run stopped between them leaves the two out of step, and the next
      run rebuilds both. -#}
  {% do adapter.icetime_fault('before_write') %}
  {% do adapter.icetime_change_step("carry", model) %}
  {% call statement('icetime_cdf_groups') %}{{ state_sql }}{% endcall %}
  {% do adapter.icetime_fault('between_state_and_target') %}
  {% do adapter.icetime_fault('during_write') %}
  {% call statement('main') %}{{ target_sql }}{% endcall %}
{% endmacro %}


{% macro icetime_cdf_payload(run, changes, columns, existing_relation, on_schema_change) %}
  {#- The payload (what lands in the target) serves the schema check and the writes of append
      and recompute. Those two land every column of the model, so the model's rows are their
      payload. A merge reads the model's rows itself, and its payload (the rows less the change
      columns) is a view made only for a schema check. Returns the payload relation, or none. -#}
  {%- if run.mode != 'merge' -%}
    {%- do process_schema_changes(on_schema_change, changes, existing_relation) -%}
    {{ return(changes) }}
  {%- elif on_schema_change == 'ignore' -%}
    {{ return(none) }}
  {%- endif -%}
  {%- set payload = icetime_changes_temp_relation('__icetime_payload') -%}
  {% call statement('create_payload_relation') -%}
    create or replace temporary view {{ payload }} as
    select {{ columns | map(attribute='quoted') | join(', ') }} from {{ changes }}
  {%- endcall %}
  {%- do process_schema_changes(on_schema_change, payload, existing_relation) -%}
  {{ return(payload) }}
{% endmacro %}


{% macro icetime_cdf_recover_append(run) %}
  {#- An interrupted append run may have appended part of this range already: take it out. -#}
  {%- if run.mode == 'append' and run.recovering and run.range_snapshot_ids -%}
    {% call statement('icetime_cdf_recover') -%}
      delete from {{ this }} where _commit_snapshot_id in ({{ run.range_snapshot_ids | join(', ') }})
    {%- endcall %}
  {%- endif -%}
{% endmacro %}

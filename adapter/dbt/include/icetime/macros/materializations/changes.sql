{#- What the two materializations on the change engine share (the adapter's changes/): CDF
    incremental models (incremental/cdf.sql) and SCD snapshots (scd_snapshot.sql). Each plans
    its run, writes its data, then ends with icetime_changes_end: the watermarks move after the
    data commit, the response says what the run chose and read. -#}

{% macro icetime_changes_temp_relation(suffix) %}
  {{ return(this.incorporate(path={"identifier": this.identifier ~ suffix}).include(database=false, schema=false)) }}
{% endmacro %}


{% macro icetime_changes_write(sql) %}
  {#- The run's data statement, with the fault points of icetime's exactly-once tests. Its
      commit carries the new watermarks. -#}
  {% do adapter.icetime_fault('before_write') %}
  {% do adapter.icetime_change_step("carry", model) %}
  {% do adapter.icetime_fault('during_write') %}
  {%- call statement('main') -%}{{ sql }}{%- endcall -%}
{% endmacro %}


{% macro icetime_changes_none(run) %}
  {#- Nothing to apply (only compactions since the watermark, say): the watermark may still
      move, a metadata update with no data read. -#}
  {{ log("icetime: " ~ this ~ ": " ~ run.message, info=true) }}
  {%- call noop_statement('main', 'NO-OP no changes', 'no-op') -%}-- {{ run.message }}{%- endcall -%}
{% endmacro %}


{% macro icetime_changes_end(run, existing_relation, committed) %}
  {#- After the data statement (if it ran; its commit carried the watermarks): the session
      carries them no more; then dbt's response, grants, docs and post-hooks. -#}
  {% do adapter.icetime_change_step("finish", model, committed) %}
  {%- set main = load_result('main') -%}
  {% do store_result('main', response=adapter.icetime_change_step("response", model, main.response), agate_table=main.table) %}
  {% do apply_grants(this, config.get('grants'), should_revoke(existing_relation, full_refresh_mode=run.full)) %}
  {% do persist_docs(this, model) %}
  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [this]}) }}
{% endmacro %}

{#- Python models (the adapter's python/). The materialization runs the model's code first (dbt
    submits it only from a statement of the materialization itself: table.sql,
    incremental.sql); the code leaves its DataFrame as a global temporary view of the model's
    Spark, and these macros write the table from that view by SQL on the model's connection,
    as a SQL model's table is written: the same statements, one commit with the same record. -#}

{% macro icetime_python_source() %}
  {{ return('select * from ' ~ adapter.icetime_python_view(model)) }}
{% endmacro %}

{% macro icetime_python_table(branch) %}
  {%- set target_relation = this.incorporate(type='table') -%}
  {%- set old_relation = load_relation(this) -%}
  {%- if branch is not none -%}
    {#- The table exists (icetime created it empty if it was new): replace the branch's rows. -#}
    {% call statement('main') -%}
      insert overwrite {{ target_relation }} by name {{ icetime_python_source() }}
    {%- endcall %}
  {%- else -%}
    {%- if old_relation is not none and not old_relation.is_table -%}
      {% do adapter.drop_relation(old_relation) %}
    {%- endif -%}
    {% call statement('main') -%}
      {{ create_table_as(False, target_relation, icetime_python_source()) }}
    {%- endcall %}
    {% do persist_constraints(target_relation, model) %}
  {%- endif -%}
  {{ return(icetime_python_end(target_relation, old_relation, True)) }}
{% endmacro %}

{% macro icetime_python_incremental(existing) %}
  {#- dbt-spark's incremental materialization, its new rows from the model's DataFrame. -#}
  {%- set file_format = dbt_spark_validate_get_file_format(config.get('file_format', default='iceberg')) -%}
  {%- set strategy = dbt_spark_validate_get_incremental_strategy(config.get('incremental_strategy') or 'append', file_format) -%}
  {%- set on_schema_change = incremental_validate_on_schema_change(config.get('on_schema_change'), default='ignore') -%}
  {%- set target_relation = this.incorporate(type='table') -%}
  {%- set full = existing is none or existing.is_view or should_full_refresh() -%}
  {%- if full -%}
    {%- if existing is not none and existing.is_view -%}{% do adapter.drop_relation(existing) %}{%- endif -%}
    {% call statement('main') -%}
      {{ create_table_as(False, target_relation, icetime_python_source()) }}
    {%- endcall %}
    {% do persist_constraints(target_relation, model) %}
  {%- else -%}
    {%- if strategy in ['insert_overwrite', 'microbatch'] and config.get('partition_by') -%}
      {% call statement() %}set spark.sql.sources.partitionOverwriteMode = DYNAMIC{% endcall %}
    {%- endif -%}
    {%- set tmp_relation = this.incorporate(path={"identifier": this.identifier ~ '__dbt_tmp'}).include(database=false, schema=false) -%}
    {% call statement('create_tmp_relation') -%}
      {{ create_table_as(True, tmp_relation, icetime_python_source()) }}
    {%- endcall %}
    {%- do process_schema_changes(on_schema_change, tmp_relation, existing) -%}
    {% call statement('main') -%}
      {{ dbt_spark_get_incremental_sql(strategy, tmp_relation, target_relation, existing, config.get('unique_key'), config.get('predicates') or config.get('incremental_predicates')) }}
    {%- endcall %}
  {%- endif -%}
  {{ return(icetime_python_end(target_relation, existing, full)) }}
{% endmacro %}

{% macro icetime_python_inputs() %}
  {#- The model's refs and sources as relations (pinned reads), by the keys of the names its
      dbt.changes() calls give them: ref:orders, ref:package.orders.v2, source:raw.objects. -#}
  {%- set inputs = {} -%}
  {%- for r in model.refs -%}
    {%- set args = [r.get('package'), r['name']] if r.get('package') else [r['name']] -%}
    {%- set key = 'ref:' ~ (args | join('.')) ~ (('.v' ~ r['version']) if r.get('version') else '') -%}
    {%- do inputs.update({key: ref(*args, v=r.get('version'))}) -%}
  {%- endfor -%}
  {%- for s in model.sources -%}
    {%- do inputs.update({'source:' ~ (s | join('.')): source(*s)}) -%}
  {%- endfor -%}
  {{ return(inputs) }}
{% endmacro %}

{% macro icetime_python_cdf() %}
  {#- A CDF model: its DataFrame (over its change views) is its query; the change engine
      writes it (incremental/cdf.sql). -#}
  {%- set result = icetime_cdf_materialization(icetime_python_source()) -%}
  {% call statement('python_view') -%}
    drop view if exists {{ adapter.icetime_python_view(model) }}
  {%- endcall %}
  {{ return(result) }}
{% endmacro %}

{% macro icetime_python_end(target_relation, old_relation, full) %}
  {% call statement('python_view') -%}
    drop view if exists {{ adapter.icetime_python_view(model) }}
  {%- endcall %}
  {% do apply_grants(target_relation, config.get('grants'), should_revoke(old_relation, full_refresh_mode=full)) %}
  {% do persist_docs(target_relation, model) %}
  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [target_relation]}) }}
{% endmacro %}

{#-
  Pinned reads. ref() and source() return the relation at the snapshot this invocation reads it
  at (see dbt.adapters.icetime.pins): what `pin_snapshot` asks for, or else the snapshot that was
  current when the run started. Models built in the same invocation, and `this`, are never pinned.
  The pin shows in compiled SQL as `... VERSION AS OF <snapshot id>`.
-#}

{% macro ref() %}
  {{ return(icetime_pinned_input(builtins.ref(*varargs, **kwargs))) }}
{% endmacro %}

{% macro source(source_name, table_name) %}
  {{ return(icetime_pinned_input(builtins.source(source_name, table_name))) }}
{% endmacro %}

{% macro icetime_pinned_input(relation) %}
  {%- if not execute or graph is not defined -%}
    {{ return(relation) }}
  {%- endif -%}
  {{ return(adapter.icetime_input(
      relation,
      model.unique_id if model is defined and model else none,
      selected_resources if selected_resources is defined else [],
      graph,
      config.get('pin_schema_mode'),
      config.get('materialized'))) }}
{% endmacro %}

{#- Shared tags: one tag on many tables, replayed together with pin_snapshot: "tag:<name>". -#}

{% macro tag(name=none, model=none, relation=none, select=none, retain=none) %}
  {%- do icetime_check_arguments('tag', kwargs, ['name', 'model', 'relation', 'select', 'retain']) -%}
  {{ return(adapter.dispatch('tag', 'icetime')(name, model, relation, select, retain)) }}
{% endmacro %}

{% macro default__tag(name, model, relation, select, retain) %}{{ icetime_requires_adapter('tag') }}{% endmacro %}

{% macro icetime__tag(name, model, relation, select, retain) %}
  {#- One tag `name` on every selected table at its current snapshot, so that
      --vars '{pin_snapshot: "tag:<name>"}' replays them together. All or none. `retain`: a TTL
      such as 30d (counted from now). -#}
  {%- if execute %}{{ log(adapter.icetime_history_operation("tag", graph, name, model, relation, select, retain), info=true) }}{% endif -%}
{% endmacro %}

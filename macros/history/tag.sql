{% macro tag(name=none, model=none, relation=none, select=none, retain=none) %}
  {#- One tag `name` on every selected table at its current snapshot, so that
      --vars '{pin_snapshot: "tag:<name>"}' replays them together. All or none. `retain`: a TTL
      such as 30d (counted from now). -#}
  {%- if execute -%}
    {{ log(adapter.icetime_tag(graph, name, model, relation, select, retain), info=true) }}
  {%- endif -%}
{% endmacro %}

{#- What a run with skip_unchanged would build or skip, and why. Changes nothing. -#}

{% macro plan(select=none) %}
  {%- do icetime_check_arguments('plan', kwargs, ['select']) -%}
  {{ return(adapter.dispatch('plan', 'icetime')(select)) }}
{% endmacro %}

{% macro default__plan(select) %}{{ icetime_requires_adapter('plan') }}{% endmacro %}

{% macro icetime__plan(select) %}
  {#- One line per selected model, in build order: build or skip, and why (which input moved,
      from which snapshot to which). Printed, and returned as a list of
      {node, name, materialized, plan, why, moved}. -#}
  {%- if execute -%}
    {%- set planned = adapter.icetime_plan(select) -%}
    {{ print(planned['text']) }}
    {{ return(planned['models']) }}
  {%- endif -%}
{% endmacro %}

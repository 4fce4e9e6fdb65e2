{#- What every public icetime macro does on an adapter other than icetime's: refuse, saying why. -#}

{% macro icetime_requires_adapter(name) %}
  {% do exceptions.raise_compiler_error(
    "icetime." ~ name ~ " needs the icetime adapter (profile type: icetime); this target is '"
    ~ target.type ~ "'.") %}
{% endmacro %}

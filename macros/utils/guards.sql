{#- What every public icetime macro checks first: the adapter, and the arguments it was given. -#}

{% macro icetime_requires_adapter(name) %}
  {% do exceptions.raise_compiler_error(
    "icetime." ~ name ~ " needs the icetime adapter (profile type: icetime); this target is '"
    ~ target.type ~ "'.") %}
{% endmacro %}

{% macro icetime_check_arguments(operation, given, accepted) %}
  {#- An operation called with an argument it does not take (a misspelt key, say) stops with
      the accepted ones, instead of Jinja's "takes no keyword argument". -#}
  {%- set unknown = given.keys() | reject('in', accepted) | list -%}
  {%- if unknown -%}
    {% do exceptions.raise_compiler_error(
      "icetime." ~ operation ~ ": unknown argument(s) " ~ unknown | join(', ')
      ~ ". Accepted: " ~ accepted | join(', ') ~ ".") %}
  {%- endif -%}
{% endmacro %}

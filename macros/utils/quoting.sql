{#-
  Quoting for values that reach SQL: every user-supplied string in icetime goes through one of
  these, never straight into a statement.
-#}

{% macro quote_string(value) -%}
  {{ return(adapter.dispatch('quote_string', 'icetime')(value)) }}
{%- endmacro %}

{% macro default__quote_string(value) -%}
  {{ return("'" ~ (value | string | replace("'", "''")) ~ "'") }}
{%- endmacro %}

{% macro icetime__quote_string(value) -%}
  {#- Spark SQL treats backslash as an escape character inside literals. -#}
  {{ return(adapter.icetime_quote_string(value)) }}
{%- endmacro %}

{% macro quote_identifier(name) -%}
  {{ return(adapter.dispatch('quote_identifier', 'icetime')(name)) }}
{%- endmacro %}

{% macro default__quote_identifier(name) -%}
  {%- if name is none or (name | string | trim) == '' -%}
    {% do exceptions.raise_compiler_error("icetime.quote_identifier: an identifier cannot be empty; got " ~ (name | tojson)) %}
  {%- endif -%}
  {{ return('`' ~ (name | string | replace('`', '``')) ~ '`') }}
{%- endmacro %}

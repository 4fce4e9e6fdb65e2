{#- The project's warm local Spark server, reachable with the adapter alone (no package):
    `dbt run-operation stop_server` and `dbt run-operation server_status`. The icetime
    package's `icetime.stop_server` and `icetime.server_status` are these. -#}

{% macro stop_server() %}
  {%- if kwargs -%}
    {% do exceptions.raise_compiler_error(
      "stop_server: unknown argument(s) " ~ kwargs.keys() | join(', ') ~ ". It takes none.") %}
  {%- endif -%}
  {%- if execute -%}
    {{ print(adapter.icetime_server('stop')) }}
  {%- endif -%}
{% endmacro %}

{% macro server_status() %}
  {%- if kwargs -%}
    {% do exceptions.raise_compiler_error(
      "server_status: unknown argument(s) " ~ kwargs.keys() | join(', ') ~ ". It takes none.") %}
  {%- endif -%}
  {%- if execute -%}
    {{ print(adapter.icetime_server('status')) }}
  {%- endif -%}
{% endmacro %}

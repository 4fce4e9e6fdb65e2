{#- The project's warm local Spark server (method: session, server: true): see docs/flow/server.md.
    The adapter's own macros do the work (`dbt.stop_server`: the adapter's project is one of
    dbt's internal ones), so `dbt run-operation stop_server` needs no package. -#}

{% macro stop_server() %}
  {#- Stop the server of this target's icetime_dir; the next command that needs Spark starts a
      new one. -#}
  {%- do icetime_check_arguments('stop_server', kwargs, []) -%}
  {{ return(adapter.dispatch('stop_server', 'icetime')()) }}
{% endmacro %}

{% macro default__stop_server() %}{{ icetime_requires_adapter('stop_server') }}{% endmacro %}

{% macro icetime__stop_server() %}{{ return(dbt.stop_server()) }}{% endmacro %}

{% macro server_status() %}
  {#- Whether the server runs, with its pid, port, uptime and memory (as `dbt debug` shows). -#}
  {%- do icetime_check_arguments('server_status', kwargs, []) -%}
  {{ return(adapter.dispatch('server_status', 'icetime')()) }}
{% endmacro %}

{% macro default__server_status() %}{{ icetime_requires_adapter('server_status') }}{% endmacro %}

{% macro icetime__server_status() %}{{ return(dbt.server_status()) }}{% endmacro %}

{#- Zero-copy clone environments with a lifetime. See README, "Clone environments". -#}

{% macro create_environment(env=none, ttl=none, from_schema=none, state=none, select=none, at=none, owner=none, replace=false) %}
  {#- Clone every Iceberg table of from_schema (or of a --state manifest, or a select of them)
      into <schema>__<env>, recreate the views there against the clones, and record it all. -#}
  {%- if execute -%}
    {% set summary = adapter.icetime_create_environment(env, ttl, from_schema, state, select, at, owner, replace) %}
    {{ log(summary, info=true) }}
  {%- endif -%}
{% endmacro %}

{% macro drop_expired_environments(env=none, dry_run=true, ignore_ttl=false) %}
  {#- The janitor: drops expired clones, their protective tags and the files they wrote.
      A dry run (the default) only lists what it would drop. -#}
  {%- if execute -%}
    {{ log(adapter.icetime_drop_expired_environments(env, dry_run, ignore_ttl), info=true) }}
  {%- endif -%}
{% endmacro %}

{% macro environment_report(env=none) %}
  {#- Per environment and object: bytes shared with the source, written by the clone, and held
      in the source only by the clone's tag. Printed, and returned as an agate table. -#}
  {%- if execute -%}
    {% set report = adapter.icetime_environment_report(env) %}
    {{ log(adapter.icetime_render_report(report), info=true) }}
    {{ return(report) }}
  {%- endif -%}
{% endmacro %}

{% macro publish(branch=none, results=none) %}
  {#- Write-audit-publish: fast-forward main to `branch` on every table of the project that has
      it, only if the last `dbt build`/`dbt test --vars '{wap_branch: <branch>}'` passed every
      test (read from target/run_results.json, or `results`). All tables or none. -#}
  {%- if execute -%}
    {{ log(adapter.icetime_publish(branch, graph, results), info=true) }}
  {%- endif -%}
{% endmacro %}

{#- Zero-copy clone environments with a lifetime, and publishing a branch run. See README,
    "Clone environments". -#}

{% macro create_environment(env=none, ttl=none, from_schema=none, state=none, select=none, at=none, owner=none, replace=false) %}
  {%- do icetime_check_arguments('create_environment', kwargs, ['env', 'ttl', 'from_schema', 'state', 'select', 'at', 'owner', 'replace']) -%}
  {{ return(adapter.dispatch('create_environment', 'icetime')(env, ttl, from_schema, state, select, at, owner, replace)) }}
{% endmacro %}

{% macro default__create_environment(env, ttl, from_schema, state, select, at, owner, replace) %}{{ icetime_requires_adapter('create_environment') }}{% endmacro %}

{% macro icetime__create_environment(env, ttl, from_schema, state, select, at, owner, replace) %}
  {#- Clone every Iceberg table of from_schema (or of a --state manifest, or a select of them)
      into <schema>__<env>, recreate the views there against the clones, and record it all. -#}
  {%- if execute %}{{ log(adapter.icetime_environments("create_environment", env, ttl, from_schema, state, select, at, owner, replace), info=true) }}{% endif -%}
{% endmacro %}


{% macro drop_expired_environments(env=none, dry_run=true, ignore_ttl=false) %}
  {%- do icetime_check_arguments('drop_expired_environments', kwargs, ['env', 'dry_run', 'ignore_ttl']) -%}
  {{ return(adapter.dispatch('drop_expired_environments', 'icetime')(env, dry_run, ignore_ttl)) }}
{% endmacro %}

{% macro default__drop_expired_environments(env, dry_run, ignore_ttl) %}{{ icetime_requires_adapter('drop_expired_environments') }}{% endmacro %}

{% macro icetime__drop_expired_environments(env, dry_run, ignore_ttl) %}
  {#- The janitor: drops expired clones, their protective tags and the files they wrote.
      A dry run (the default) only lists what it would drop. -#}
  {%- if execute %}{{ log(adapter.icetime_environments("drop_expired_environments", env, dry_run, ignore_ttl), info=true) }}{% endif -%}
{% endmacro %}


{% macro environment_report(env=none) %}
  {%- do icetime_check_arguments('environment_report', kwargs, ['env']) -%}
  {{ return(adapter.dispatch('environment_report', 'icetime')(env)) }}
{% endmacro %}

{% macro default__environment_report(env) %}{{ icetime_requires_adapter('environment_report') }}{% endmacro %}

{% macro icetime__environment_report(env) %}
  {#- Per environment and object: bytes shared with the source, written by the clone, and held
      in the source only by the clone's tag. Printed, and returned as an agate table. -#}
  {%- if execute -%}
    {% set report = adapter.icetime_environment_report(env) %}
    {{ log(adapter.icetime_render_report(report), info=true) }}
    {{ return(report) }}
  {%- endif -%}
{% endmacro %}


{% macro publish(branch=none, results=none) %}
  {%- do icetime_check_arguments('publish', kwargs, ['branch', 'results']) -%}
  {{ return(adapter.dispatch('publish', 'icetime')(branch, results)) }}
{% endmacro %}

{% macro default__publish(branch, results) %}{{ icetime_requires_adapter('publish') }}{% endmacro %}

{% macro icetime__publish(branch, results) %}
  {#- Write-audit-publish: fast-forward main to `branch` on every table of the project that has
      it, only if the last `dbt build`/`dbt test --vars '{wap_branch: <branch>}'` passed every
      test (read from target/run_results.json, or `results`). All tables or none. -#}
  {%- if execute %}{{ log(adapter.icetime_publish(branch, graph, results), info=true) }}{% endif -%}
{% endmacro %}

{#- Restore: tables back to a past state, as a metadata operation, after checking its files. -#}

{% macro restore(to=none, model=none, relation=none, dry_run=true) %}
  {%- do icetime_check_arguments('restore', kwargs, ['to', 'model', 'relation', 'dry_run']) -%}
  {{ return(adapter.dispatch('restore', 'icetime')(to, model, relation, dry_run)) }}
{% endmacro %}

{% macro default__restore(to, model, relation, dry_run) %}{{ icetime_requires_adapter('restore') }}{% endmacro %}

{% macro icetime__restore(to, model, relation, dry_run) %}
  {#- Move tables back to a past state (a snapshot id, a timestamp, or tag:/branch:NAME) as a
      metadata operation, after checking every file that state reads still exists. `model` and
      `relation` take one name or a list; all tables are checked before any is changed. -#}
  {%- if execute %}{{ log(adapter.icetime_history_operation("restore", graph, to, model, relation, dry_run), info=true) }}{% endif -%}
{% endmacro %}

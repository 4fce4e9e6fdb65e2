{#- `dbt clone` for Iceberg: zero-copy clones (dbt-spark's supports Delta only). -#}

{% macro icetime__can_clone_table() %}
  {{ return(True) }}
{% endmacro %}

{% materialization clone, adapter='icetime' %}
  {%- set relations = {'relations': []} -%}
  {%- if not defer_relation -%}
    {{ log("No relation found in state manifest for " ~ model.unique_id, info=True) }}
    {{ return(relations) }}
  {%- endif -%}

  {%- set existing_relation = load_cached_relation(this) -%}
  {%- if existing_relation and not flags.FULL_REFRESH -%}
    {{ log("Relation " ~ existing_relation ~ " already exists", info=True) }}
    {{ return(relations) }}
  {%- endif -%}

  {%- set other_existing_relation = load_cached_relation(defer_relation) -%}
  {%- if other_existing_relation and other_existing_relation.type == 'table' and can_clone_table() -%}
    {%- set target_relation = this.incorporate(type='table') -%}
    {%- if target_relation.database == defer_relation.database
          and target_relation.schema == defer_relation.schema
          and target_relation.identifier == defer_relation.identifier -%}
      {{ log("Target relation and defer relation are the same, skipping clone for relation: " ~ target_relation.render()) }}
      {%- call noop_statement('main', 'SKIPPED') -%}-- same relation{%- endcall -%}
    {%- else -%}
      {%- do icetime_clone_into(defer_relation, target_relation, existing_relation) -%}
    {%- endif -%}
    {% do persist_docs(target_relation, model) %}
    {{ return({'relations': [target_relation]}) }}
  {%- else -%}
    {#- dbt's behaviour: a view over the state's relation, recorded with the environment. -#}
    {%- set built = materialization_view_default() -%}
    {% do adapter.icetime_record_clone_view(defer_relation, this) %}
    {{ return(built) }}
  {%- endif -%}
{% endmaterialization %}


{% macro icetime_clone_into(source, target_relation, existing_relation, why=none) %}
  {#- Replace target_relation with a zero-copy clone of source, as this node's result: dbt clone,
      and a --defer run reusing production's build (skip.sql). Returns the clone's message. -#}
  {%- set message = adapter.icetime_clone_relation(source, target_relation, existing_relation) -%}
  {%- call noop_statement('main', message) -%}-- {{ message }}{% if why %}: {{ why }}{% endif %}{%- endcall -%}
  {% do adapter.cache_added(target_relation) %}
  {{ return(message) }}
{% endmacro %}

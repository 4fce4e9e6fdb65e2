{#- view: dbt's, except in a branch run, where views are not rebuilt: they read the branch heads
    through the session's spark.wap.branch already. -#}

{% materialization view, adapter='icetime' %}
  {%- set unchanged = icetime_unchanged() -%}
  {%- if unchanged is not none -%}{{ return(unchanged) }}{%- endif -%}
  {%- if adapter.icetime_var('wap_branch') is none -%}
    {{ return(materialization_view_default()) }}
  {%- endif -%}
  {{ log("icetime: " ~ this ~ " is a view: not rebuilt in a branch run (it reads the branch through spark.wap.branch)", info=true) }}
  {%- call noop_statement('main', 'SKIPPED (view in a branch run)') -%}-- view{%- endcall -%}
  {{ return({'relations': []}) }}
{% endmaterialization %}

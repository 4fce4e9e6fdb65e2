{#- incremental: incremental_strategy='cdf' is icetime's own (cdf.sql); every other strategy is
    dbt-spark's materialization with icetime's strategy macros (strategies.sql). -#}

{% materialization incremental, adapter='icetime', supported_languages=['sql', 'python'] -%}
  {%- if config.get('incremental_strategy') == 'cdf' -%}
    {{ return(icetime_cdf_materialization()) }}
  {%- else -%}
    {{ return(materialization_incremental_spark()) }}
  {%- endif -%}
{%- endmaterialization %}

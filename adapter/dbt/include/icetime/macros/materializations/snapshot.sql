{#- snapshot: dbt-spark's for the timestamp and check strategies; strategy iceberg_history builds
    the versions from the source's Iceberg commits (icetime_scd_snapshot). A completed
    snapshot records the input snapshots it was built from. -#}

{% materialization snapshot, adapter='icetime' %}
  {%- if config.get('strategy') == 'iceberg_history' -%}
    {{ return(icetime_build_finished(icetime_scd_snapshot())) }}
  {%- endif -%}
  {{ return(icetime_build_finished(materialization_snapshot_spark())) }}
{% endmaterialization %}

{#- snapshot: dbt-spark's; a completed snapshot records the input snapshots it was built from. -#}

{% materialization snapshot, adapter='icetime' %}
  {{ return(icetime_build_finished(materialization_snapshot_spark())) }}
{% endmaterialization %}

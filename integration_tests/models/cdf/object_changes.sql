{#- CDF append: every change to the raw objects table, once, with its commit. -#}
{{ config(materialized='incremental', incremental_strategy='cdf', cdf_mode='append',
          cdf_refresh=var('cdf_refresh', 'auto')) }}

select object_id, status, _change_type, _commit_snapshot_id, _commit_timestamp, _change_ordinal
from {{ icetime.changes(source('raw', 'objects')) }}

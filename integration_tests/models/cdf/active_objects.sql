{#- CDF merge: the active objects, maintained from the raw objects table's changes only.
    A MERGE upstream that marks an object decayed arrives as update_before/update_after; the
    new image fails the filter, so the object leaves this table. -#}
{{ config(materialized='incremental', incremental_strategy='cdf', unique_key='object_id',
          cdf_refresh=var('cdf_refresh', 'auto')) }}

select object_id, object_name, object_type, operator, orbit_class, updated_at, _change_type
from {{ icetime.changes(source('raw', 'objects')) }}
where status = 'active'

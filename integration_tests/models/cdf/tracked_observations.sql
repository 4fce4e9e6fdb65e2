{#- CDF through a join: every observation with its object's catalogue entry, plain SQL over
    two raw tables with a unique_key and no changes(). A run applies the changes of both: a new
    batch of observations adds its rows; a status change in raw.objects rewrites that object's
    observations (docs/flow/cdf-joins.md). -#}
{{ config(materialized='incremental', incremental_strategy='cdf', unique_key='observation_id',
          cdf_refresh=var('cdf_refresh', 'auto')) }}

select s.observation_id, s.object_id, s.observed_at, s.altitude_km, s.sensor,
       o.object_name, o.operator, o.orbit_class, o.status
from {{ source('raw', 'observations') }} as s
join {{ source('raw', 'objects') }} as o on o.object_id = s.object_id

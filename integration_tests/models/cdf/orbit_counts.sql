{#- CDF recompute: per-orbit counts, recomputed only for the orbit classes whose objects
    changed since the last run (before or after images), merged, gone classes deleted. -#}
{{ config(materialized='incremental', incremental_strategy='cdf',
          cdf_recompute_keys=['orbit_class'],
          cdf_refresh=var('cdf_refresh', 'auto')) }}

select orbit_class, count(*) as objects, count_if(status = 'active') as active
from {{ source('raw', 'objects') }}
group by orbit_class

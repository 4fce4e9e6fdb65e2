-- One row per catalogued object with its most recent observation.
with latest as (
    select *,
        row_number() over (partition by object_id order by observed_at desc) as recency
    from {{ ref('stg_observations') }}
)

select
    o.object_id,
    o.object_name,
    o.object_type,
    o.operator,
    o.orbit_class,
    o.is_active,
    l.observed_at as last_observed_at,
    l.altitude_km,
    l.inclination_deg,
    l.velocity_kms
from {{ ref('stg_objects') }} as o
left join latest as l
    on l.object_id = o.object_id and l.recency = 1

select
    (select count(distinct observed_at) from {{ ref('stg_observations') }}) as batches,
    orbit_class,
    count(*) as objects,
    count_if(is_active) as active,
    count_if(not is_active) as decayed
from {{ ref('stg_objects') }}
group by orbit_class

-- Objects per operator and type: reads the object catalogue only, never the observations.
select
    operator,
    object_type,
    count(*) as objects,
    count_if(is_active) as active
from {{ ref('stg_objects') }}
group by operator, object_type

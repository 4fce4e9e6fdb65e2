{#- The incrementally maintained models equal the same SQL built from scratch: any row
    returned here is a difference. -#}
with rebuilt_active as (
  select object_id, object_name, object_type, operator, orbit_class, updated_at
  from {{ source('raw', 'objects') }} where status = 'active'
),
rebuilt_counts as (
  select orbit_class, count(*) as objects, count_if(status = 'active') as active
  from {{ source('raw', 'objects') }} group by orbit_class
),
rebuilt_tracked as (
  select s.observation_id, s.object_id, s.observed_at, s.altitude_km, s.sensor,
         o.object_name, o.operator, o.orbit_class, o.status
  from {{ source('raw', 'observations') }} as s
  join {{ source('raw', 'objects') }} as o on o.object_id = s.object_id
)
(select 'active_objects: only incremental' as problem, object_id as detail from (
  select * from {{ ref('active_objects') }} except all select * from rebuilt_active))
union all
(select 'active_objects: only rebuilt', object_id from (
  select * from rebuilt_active except all select * from {{ ref('active_objects') }}))
union all
(select 'orbit_counts: differs', null from (
  (select * from {{ ref('orbit_counts') }} except all select * from rebuilt_counts)
  union all
  (select * from rebuilt_counts except all select * from {{ ref('orbit_counts') }})))
union all
(select 'tracked_observations: differs', observation_id from (
  (select * from {{ ref('tracked_observations') }} except all select * from rebuilt_tracked)
  union all
  (select * from rebuilt_tracked except all select * from {{ ref('tracked_observations') }})))

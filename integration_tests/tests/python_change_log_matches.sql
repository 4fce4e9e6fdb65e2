{#- The Python change log holds exactly the SQL one's rows: any row returned is a difference.
    Python models run where the profile's method is session (models/cdf/schema.yml). -#}
{{ config(enabled=target.get('method') == 'session') }}
(select 'only in the Python log' as problem, object_id from (
  select * from {{ ref('object_changes_py') }} except all select * from {{ ref('object_changes') }}))
union all
(select 'only in the SQL log', object_id from (
  select * from {{ ref('object_changes') }} except all select * from {{ ref('object_changes_py') }}))

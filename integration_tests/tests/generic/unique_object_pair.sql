{% test unique_object_pair(model) %}
select primary_object_id, secondary_object_id, count(*) as n
from {{ model }}
group by primary_object_id, secondary_object_id
having count(*) > 1
{% endtest %}

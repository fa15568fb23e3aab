"""The built-in nodes, one versioned class per module, registered on import.

They register through ``agentlake.graph.register_node``, the door a third-party node uses too.
A new version of a node is a new module (``thinker_v2``) beside the old one, so graphs that
name ``thinker_v1`` keep their behaviour.
"""

from agentlake.graph.nodes import (  # noqa: F401  (each module registers its class)
    director_v1,
    input_v1,
    memorizer_v1,
    output_v1,
    sensor_v1,
    thinker_v1,
    ui_v1,
)

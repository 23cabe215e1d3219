//! Tasks and runqueues of the fair class: weights, EEVDF and legacy CFS pick.

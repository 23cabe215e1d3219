use super::*;

#[test]
fn admit_sums_what_is_used_and_names_the_first_resource_over() {
    let room = Room {
        limits: Limits {
            max_tasks: 10,
            max_cpusets: 2,
        },
        used: Size {
            tasks: 6,
            cpusets: 1,
        },
    };
    assert_eq!(room.admit(Size::tasks(4)), Ok(()));
    assert_eq!(
        room.admit(Size::tasks(5)),
        Err(LimitError {
            resource: Resource::Tasks,
            needed: 11,
            limit: 10
        })
    );
    assert_eq!(
        room.admit(Size {
            tasks: 1,
            cpusets: 2
        }),
        Err(LimitError {
            resource: Resource::Cpusets,
            needed: 3,
            limit: 2
        })
    );
    // Sizes near u64::MAX saturate instead of wrapping under the limit.
    assert!(room.admit(Size::tasks(u64::MAX)).is_err());
}

//! The writer's argument shapes (§1.5).

use super::out::Out;
use super::{ap, opt, opt_shared, Writer};
use crate::bir::argument::{Argument, SymbolicAp};
use crate::bir::schema::key;
use crate::error::Result;

impl<'c> Writer<'c> {
    pub(super) fn argument(&mut self, o: &mut Out, a: &'c Argument) -> Result<()> {
        match a {
            Argument::Symbolic(s) => return self.symbolic(o, s),
            Argument::Physical(p) => {
                o.raw(
                    concat!(
                        "{\"",
                        key!(arg kind),
                        "\":\"",
                        key!(arg_kind physical_ap),
                        "\",\"",
                        key!(arg ap),
                        "\":"
                    )
                    .as_bytes(),
                );
                ap(o, &p.ap);
                opt!(o, (arg offset), p.offset, int);
                opt_shared!(o, self.kept, (arg dtype), &p.dtype);
                opt_shared!(o, self.kept, (arg memref), &p.memref);
                opt_shared!(o, self.kept, (arg memsetref), &p.memsetref);
                self.kept.extras(o, &p.extra);
            }
            Argument::Imm { dtype, value, extra } => {
                o.raw(concat!("{\"", key!(arg kind), "\":\"", key!(arg_kind imm_value), "\"").as_bytes());
                opt_shared!(o, self.kept, (arg dtype), dtype);
                o.raw(concat!(",\"", key!(arg value), "\":").as_bytes());
                o.value(value);
                self.kept.extras(o, extra);
            }
            Argument::Other { fields, .. } => {
                o.value_map(fields);
                return Ok(());
            }
        }
        o.byte(b'}');
        Ok(())
    }

    /// A symbolic argument.
    pub(super) fn symbolic(&mut self, o: &mut Out, s: &SymbolicAp) -> Result<()> {
        o.raw(if s.pwap {
            concat!(
                "{\"",
                key!(arg kind),
                "\":\"",
                key!(arg_kind symbolic_pwap),
                "\",\"",
                key!(arg ap),
                "\":"
            )
            .as_bytes()
        } else {
            concat!(
                "{\"",
                key!(arg kind),
                "\":\"",
                key!(arg_kind symbolic_ap),
                "\",\"",
                key!(arg ap),
                "\":"
            )
            .as_bytes()
        });
        ap(o, &s.ap);
        opt_shared!(o, self.kept, (arg dtype), &s.dtype);
        opt_shared!(o, self.kept, (arg memsetref), &s.memsetref);
        o.raw(concat!(",\"", key!(arg addrs), "\":[").as_bytes());
        for (i, &e) in s.addrs.iter().enumerate() {
            if i > 0 {
                o.byte(b',');
            }
            self.expr(o, e)?;
        }
        o.byte(b']');
        if let Some(e) = s.tile_addrs {
            o.raw(concat!(",\"", key!(arg tile_addrs), "\":").as_bytes());
            self.expr(o, e)?;
        }
        if let Some(e) = s.block_addrs {
            o.raw(concat!(",\"", key!(arg block_addrs), "\":").as_bytes());
            self.expr(o, e)?;
        }
        if let Some(v) = &s.access_shape {
            o.raw(concat!(",\"", key!(arg access_shape), "\":").as_bytes());
            self.kept.value(o, v);
        }
        self.kept.extras(o, &s.extra);
        o.byte(b'}');
        Ok(())
    }
}

//! The committing verbs: words in an element's accessible name that make a click
//! committing, in several languages.
//!
//! Matching is deliberately wide: a word that *starts with* a stem matches (`pay` matches
//! `Payment`, `order` matches `Orders`), and a phrase matches whole words in order. A
//! harmless button refused is the cheap error; a payment allowed is not.

/// Stems for scripts that separate words with spaces: a word of the name starting with one
/// of these matches.
const STEMS: &[&str] = &[
    // English
    "post",
    "publish",
    "send",
    "submit",
    "apply",
    "buy",
    "pay",
    "order",
    "purchase",
    "checkout",
    "confirm",
    "delete",
    "remove",
    "signup",
    "register",
    "subscribe",
    "upload",
    "save",
    "share",
    "tweet",
    "reply",
    "donate",
    "transfer",
    "book",
    "reserve",
    "unsubscribe",
    "cancel",
    "approve",
    "accept",
    "agree",
    "invite",
    "install",
    "sell",
    "bid",
    // German
    "senden",
    "absenden",
    "veröffentlich",
    "posten",
    "kaufen",
    "bezahl",
    "zahlen",
    "bestell",
    "bestätig",
    "lösch",
    "entfern",
    "registrier",
    "hochladen",
    "anwenden",
    "übernehmen",
    "speicher",
    "abonnier",
    "kündig",
    // French
    "publier",
    "envoyer",
    "soumettre",
    "valider",
    "appliquer",
    "acheter",
    "payer",
    "commander",
    "confirmer",
    "supprimer",
    "retirer",
    "inscri",
    "téléverser",
    "enregistrer",
    "partager",
    "paiement",
    "régler",
    // Spanish and Portuguese
    "publicar",
    "enviar",
    "aplicar",
    "comprar",
    "pagar",
    "pago",
    "ordenar",
    "confirmar",
    "eliminar",
    "borrar",
    "quitar",
    "registr",
    "subir",
    "guardar",
    "compartir",
    "encomendar",
    "excluir",
    "apagar",
    "remover",
    "cadastr",
    "carregar",
    "salvar",
    "pedido",
    "finalizar",
    // Italian
    "pubblica",
    "invia",
    "applica",
    "acquista",
    "compra",
    "paga",
    "ordina",
    "conferma",
    "elimina",
    "cancella",
    "rimuovi",
    "iscriviti",
    "carica",
    "salva",
    "condividi",
    // Dutch
    "plaatsen",
    "versturen",
    "verzenden",
    "toepassen",
    "kopen",
    "betalen",
    "bestellen",
    "bevestigen",
    "verwijderen",
    "registreren",
    "uploaden",
    "opslaan",
    "aanmelden",
    // Russian
    "опубликова",
    "отправ",
    "примени",
    "купи",
    "оплат",
    "заказ",
    "подтверд",
    "удали",
    "зарегистр",
    "загруз",
    "сохрани",
];

/// Phrases of several words: they match whole words, in order.
const PHRASES: &[&str] = &[
    "sign up",
    "check out",
    "place order",
    "add to cart",
    "create account",
    "s'inscrire",
    "jetzt kaufen",
];

/// Fragments for scripts without spaces between words: a name containing one matches.
const FRAGMENTS: &[&str] = &[
    // Japanese
    "投稿",
    "送信",
    "公開",
    "購入",
    "支払",
    "注文",
    "確定",
    "削除",
    "登録",
    "アップロード",
    "適用",
    "保存",
    "申し込",
    "申込",
    // Chinese
    "发布",
    "發佈",
    "發布",
    "提交",
    "发送",
    "發送",
    "购买",
    "購買",
    "支付",
    "付款",
    "下单",
    "订购",
    "确认",
    "確認",
    "删除",
    "刪除",
    "注册",
    "註冊",
    "上传",
    "上傳",
    "应用",
    "保存",
    // Korean
    "게시",
    "전송",
    "보내기",
    "구매",
    "결제",
    "주문",
    "확인",
    "삭제",
    "가입",
    "업로드",
    "적용",
    "저장",
    "신청",
];

/// The committing verb in `name`, if any (the stem, phrase or fragment that matched).
pub fn committing_verb(name: &str) -> Option<&'static str> {
    let lower = name.to_lowercase();
    if let Some(f) = FRAGMENTS.iter().find(|f| lower.contains(**f)) {
        return Some(f);
    }
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .collect();
    // "Sign-up", "signup" and "sign up" are one verb.
    let joined = words.join(" ");
    if let Some(p) = PHRASES.iter().find(|p| {
        let spaced = format!(" {joined} ");
        spaced.contains(&format!(" {p} "))
    }) {
        return Some(p);
    }
    for (i, word) in words.iter().enumerate() {
        if let Some(stem) = STEMS.iter().find(|s| word.starts_with(**s)) {
            return Some(stem);
        }
        // Two words written as one: "sign up" as "signup", "check out" as "checkout".
        if let Some(next) = words.get(i + 1) {
            let pair = format!("{word}{next}");
            if let Some(stem) = STEMS.iter().find(|s| pair == **s) {
                return Some(stem);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::committing_verb;

    #[test]
    fn committing_names_in_several_languages_match() {
        for name in [
            "Pay now",
            "Post",
            "Publish",
            "Send message",
            "Submit",
            "Apply filter",
            "Buy",
            "Place order",
            "Delete",
            "Remove item",
            "Sign up",
            "Sign-up",
            "Upload photo",
            "Confirm purchase",
            "Jetzt kaufen",
            "Absenden",
            "Löschen",
            "Envoyer",
            "Supprimer",
            "S'inscrire",
            "Publicar",
            "Enviar",
            "Pagar",
            "Invia",
            "Acquista",
            "Bestellen",
            "Оплатить",
            "Отправить",
            "投稿する",
            "送信",
            "购买",
            "提交",
            "결제하기",
            "삭제",
        ] {
            assert!(committing_verb(name).is_some(), "{name}");
        }
    }

    #[test]
    fn harmless_names_do_not_match() {
        for name in [
            "Next page",
            "Show more",
            "Open menu",
            "Home",
            "Profile",
            "Search",
            "Help",
            "Details",
            "Back",
            "Close",
            "Filters",
            "Weiter",
            "Suivant",
            "Siguiente",
            "次へ",
            "",
            "   ",
        ] {
            assert_eq!(committing_verb(name), None, "{name}");
        }
    }
}
